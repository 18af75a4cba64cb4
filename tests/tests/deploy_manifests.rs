//! `deploy/` as a kustomize base, checked by kustomize itself and by a real
//! kube-apiserver v1.20.2: `kubectl apply --dry-run=server -k` runs every
//! object through the server's validation and admission without storing it.

use serde_json::Value;
use watchlife_tests::deploy::{deploy_copy, kubectl, kubectl_ok, kustomize, workspace_version};
use watchlife_tests::real_cluster::RealCluster;

/// The one object of `kind` named `name`.
fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the kustomization"))
}

#[test]
fn the_base_renders_what_a_platform_team_expects() {
    let deploy = deploy_copy("t0ken");
    let objects = kustomize(&deploy.path());
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "Service",
        "Deployment",
        "NetworkPolicy",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }

    // The Secret comes from the generator, named with a hash of its content,
    // and the Deployment reads the token from that very name.
    let secret = objects.iter().find(|o| o["kind"] == "Secret").unwrap();
    let secret_name = secret["metadata"]["name"].as_str().unwrap();
    assert!(secret_name.starts_with("watchlife-token-"), "{secret_name}");
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["token"].as_str().unwrap())
        .unwrap();
    assert_eq!(token, b"t0ken");
    let deployment = object(&objects, "Deployment", "watchlife");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(
        container["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        secret_name
    );
    assert_eq!(container["env"][0]["name"], "WATCHLIFE_TOKEN");

    // The image is the tag `make image` builds.
    assert_eq!(
        container["image"],
        format!("localhost/watchlife:{}", workspace_version())
    );

    // Runs as the image's user, on a read-only root, with nothing extra.
    assert_eq!(pod["securityContext"]["runAsUser"], 65532);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");

    // Requests, and probes through the named port: liveness on /healthz,
    // readiness on /readyz (a replica takes viewers once it has listed).
    assert!(container["resources"]["requests"]["cpu"].is_string());
    assert!(container["resources"]["requests"]["memory"].is_string());
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(container[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(container[probe]["httpGet"]["port"], "http", "{probe}");
    }

    // The NetworkPolicy selects the pods and lets in only the Service's port.
    let service = object(&objects, "Service", "watchlife");
    let policy = object(&objects, "NetworkPolicy", "watchlife");
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&pod_labels[k], v, "the policy selects the pods");
    }
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    let ports: Vec<&Value> = ingress
        .iter()
        .flat_map(|rule| rule["ports"].as_array().unwrap())
        .map(|p| &p["port"])
        .collect();
    assert_eq!(ports, [&container["ports"][0]["containerPort"]]);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http");
    assert_eq!(container["ports"][0]["name"], "http");
    assert!(
        policy["spec"]["policyTypes"]
            .as_array()
            .unwrap()
            .contains(&Value::from("Ingress"))
    );
}

#[test]
fn the_replicas_component_runs_two_with_a_disruption_budget_over_the_same_pods() {
    let deploy = deploy_copy("t0ken");
    // An overlay of the base with the component, as the README shows.
    let overlay = deploy.overlay(
        "two",
        "resources: [../deploy]\ncomponents: [../deploy/replicas]\n",
    );
    let objects = kustomize(&overlay);
    let deployment = object(&objects, "Deployment", "watchlife");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pdb = object(&objects, "PodDisruptionBudget", "watchlife");
    assert_eq!(pdb["metadata"]["namespace"], "watchlife");
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in pdb["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "the budget covers the Deployment's pods");
    }
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    // No session affinity: any replica serves any viewer.
    let service = object(&objects, "Service", "watchlife");
    assert_eq!(service["spec"]["sessionAffinity"], "None");
}

#[tokio::test]
async fn the_server_validates_every_manifest_with_a_dry_run() {
    let cluster = RealCluster::start().await;
    let admin = Some(cluster.kubeconfig());
    let deploy = deploy_copy("t0ken");
    let path = deploy.path();
    let dir = path.to_str().unwrap();

    // A server-side dry run creates nothing, so the namespace the objects go
    // in does not exist for the others: a platform team creates it first.
    kubectl_ok(admin, &["create", "namespace", "watchlife"]);
    let out = kubectl_ok(admin, &["apply", "--dry-run=server", "-k", dir]);
    let objects = kustomize(&deploy.path());
    for o in &objects {
        let kind = o["kind"].as_str().unwrap().to_lowercase();
        let name = o["metadata"]["name"].as_str().unwrap();
        // `deployment.apps/watchlife created (server dry run)`
        let went_through = out.lines().any(|l| {
            let (resource, rest) = l.split_once('/').unwrap_or_default();
            let resource = resource.split('.').next().unwrap_or_default();
            resource == kind
                && rest.starts_with(&format!("{name} "))
                && l.ends_with("(server dry run)")
        });
        assert!(went_through, "{kind}/{name} went through the server: {out}");
    }
    // Nothing was stored.
    let stored = kubectl(
        admin,
        &["-n", "watchlife", "get", "deployment", "watchlife"],
    );
    assert!(!stored.status.success(), "a dry run stores nothing");

    // The server does check: a manifest it must refuse is refused.
    let deployment = deploy.path().join("deployment.yaml");
    let text = std::fs::read_to_string(&deployment).unwrap();
    std::fs::write(
        &deployment,
        text.replace("runAsUser: 65532", "runAsUser: -5"),
    )
    .unwrap();
    let refused = kubectl(admin, &["apply", "--dry-run=server", "-k", dir]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("runAsUser"), "{stderr}");
}
