//! Demo actions: each starts a story the audience can follow. Shown only
//! when the bridge accepts them (`hello.demo_actions`); the outcome comes
//! back as an `action_result` or `error` frame and is shown as a notice.

use crate::model::Model;
use crate::throttle::throttled;
use leptos::prelude::*;
use watchlife_protocol::{ClientMessage, DemoAction};

/// Label and image a new page offers, so one click tells a story.
const DEFAULT_LABEL: (&str, &str) = ("tier", "frontend");
const DEFAULT_IMAGE: &str = "nginx:1.5.3";
/// Shortest time between two redraws of the lists of objects to act on as
/// objects come and go: a list that changes under the pointer is hard to
/// pick from anyway, and a busy demo would rebuild hundreds of options on
/// every frame.
const LISTS_REDRAW_MS: f64 = 1_000.0;
/// Most objects of one kind a select offers. A person picks from a few; a
/// busy demo has hundreds of pods, each living a second, and a select of
/// hundreds of options changing every second costs the page a frame each
/// time it is laid out again.
const MAX_OFFERED: usize = 50;

#[component]
pub fn Actions() -> impl IntoView {
    let model = expect_context::<Model>();
    let enabled = move || {
        model
            .hello
            .with(|h| h.as_ref().is_some_and(|h| h.demo_actions))
    };
    view! { <Show when=enabled><ActionPanel/></Show> }
}

#[component]
fn ActionPanel() -> impl IntoView {
    let model = expect_context::<Model>();
    // The lists follow which objects exist, not their every change.
    let redraw = throttled(LISTS_REDRAW_MS, move || model.roster.track());
    // (namespace, name) of the first objects of one kind, sorted.
    let names_of = move |kind: &'static str| {
        Memo::new(move |_| {
            redraw.track();
            model.objects.with_untracked(|o| {
                o.values()
                    .filter(|h| h.target.kind == kind && !h.deleted)
                    .take(MAX_OFFERED)
                    .map(|h| {
                        (
                            h.target.namespace.clone().unwrap_or_default(),
                            h.target.name.clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        })
    };
    let pods = names_of("Pod");
    // Objects as (resource, namespace, name), pods first: any can be
    // labelled. Every object of another kind, and the first pods.
    let labellable = Memo::new(move |_| {
        redraw.track();
        let mut pods = 0;
        let mut all: Vec<(String, String, String)> = model.objects.with_untracked(|o| {
            o.values()
                .filter(|h| !h.deleted)
                .filter(|h| {
                    let pod = h.target.resource == "pods";
                    pods += usize::from(pod);
                    !pod || pods <= MAX_OFFERED
                })
                .map(|h| {
                    (
                        h.target.resource.clone(),
                        h.target.namespace.clone().unwrap_or_default(),
                        h.target.name.clone(),
                    )
                })
                .collect()
        });
        all.sort_by_key(|(r, _, _)| r != "pods");
        all
    });
    let target = RwSignal::new(String::new());
    let deployments = names_of("Deployment");
    let pod = RwSignal::new(String::new());
    let deployment = RwSignal::new(String::new());
    let key = RwSignal::new(DEFAULT_LABEL.0.to_string());
    let value = RwSignal::new(DEFAULT_LABEL.1.to_string());
    let image = RwSignal::new(DEFAULT_IMAGE.to_string());
    let replicas = RwSignal::new(3_u32);
    // The selects, read when a button is pressed: the action acts on what
    // the select shows, even when the list changed since it was chosen.
    let object_select = NodeRef::<leptos::html::Select>::new();
    let pod_select = NodeRef::<leptos::html::Select>::new();
    let deployment_select = NodeRef::<leptos::html::Select>::new();
    let shown = |select: NodeRef<leptos::html::Select>| {
        select
            .get_untracked()
            .map(|s| s.value())
            .unwrap_or_default()
    };
    // The shown `namespace/name`, or the first one offered.
    let pick = move |select: NodeRef<leptos::html::Select>, offered: Vec<(String, String)>| {
        let c = shown(select);
        offered
            .into_iter()
            .find(|(ns, n)| c.is_empty() || format!("{ns}/{n}") == c)
    };
    let send = move |action: DemoAction| {
        if !model.send(&ClientMessage::Action { action }) {
            model.tell(
                "Not connected to the bridge: the action was not sent.".into(),
                true,
            );
        }
    };
    // What each select offers, as its options' values.
    let keys = |names: Memo<Vec<(String, String)>>| {
        Memo::new(move |_| {
            names.with(|n| {
                n.iter()
                    .map(|(ns, n)| format!("{ns}/{n}"))
                    .collect::<Vec<_>>()
            })
        })
    };
    let objects = Memo::new(move |_| {
        labellable.with(|l| {
            l.iter()
                .map(|(r, ns, n)| format!("{r} {ns}/{n}"))
                .collect::<Vec<_>>()
        })
    });
    view! {
        <section class="actions panel" aria-label="Demo actions">
            <h2>"Demo actions " <small>"change the demo cluster and watch the events travel"</small></h2>
            <div class="action-row">
                <label>"object "
                    <select node_ref=object_select id="action-object" on:change=move |ev| target.set(event_target_value(&ev))>
                        <Options values=objects chosen=target/>
                    </select>
                </label>
                <label>"label "
                    <input id="label-key" size="8" prop:value=move || key.get() on:input=move |ev| key.set(event_target_value(&ev))/>
                </label>
                "="
                <input id="label-value" size="10" aria-label="label value" prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))/>
                <button id="action-label" on:click=move |_| {
                    let chosen = shown(object_select);
                    let found = labellable
                        .get_untracked()
                        .into_iter()
                        .find(|(r, ns, n)| chosen.is_empty() || format!("{r} {ns}/{n}") == chosen);
                    if let Some((resource, namespace, name)) = found {
                        send(DemoAction::Label {
                            resource,
                            namespace,
                            name,
                            key: key.get_untracked(),
                            value: value.get_untracked(),
                        });
                    }
                }>"add label"</button>
            </div>
            <div class="action-row">
                <label>"pod "
                    <select node_ref=pod_select id="action-pod" on:change=move |ev| pod.set(event_target_value(&ev))>
                        <Options values=keys(pods) chosen=pod/>
                    </select>
                </label>
                <button id="action-delete-pod" disabled=move || pods.with(Vec::is_empty) on:click=move |_| {
                    if let Some((namespace, name)) = pick(pod_select, pods.get_untracked()) {
                        send(DemoAction::DeletePod { namespace, name });
                    }
                }>"delete pod"</button>
            </div>
            <div class="action-row">
                <label>"deployment "
                    <select node_ref=deployment_select id="action-deployment" on:change=move |ev| deployment.set(event_target_value(&ev))>
                        <Options values=keys(deployments) chosen=deployment/>
                    </select>
                </label>
                <label>"replicas "
                    <input id="replicas" type="number" min="0" max="20" prop:value=move || replicas.get().to_string()
                        on:input=move |ev| if let Ok(n) = event_target_value(&ev).parse() { replicas.set(n) }/>
                </label>
                <button id="action-scale" disabled=move || deployments.with(Vec::is_empty) on:click=move |_| {
                    if let Some((namespace, name)) = pick(deployment_select, deployments.get_untracked()) {
                        send(DemoAction::Scale { namespace, name, replicas: replicas.get_untracked() });
                    }
                }>"scale"</button>
                <label>"image "
                    <input id="image" size="14" prop:value=move || image.get() on:input=move |ev| image.set(event_target_value(&ev))/>
                </label>
                <button id="action-image" disabled=move || deployments.with(Vec::is_empty) on:click=move |_| {
                    if let Some((namespace, name)) = pick(deployment_select, deployments.get_untracked()) {
                        send(DemoAction::SetImage { namespace, name, image: image.get_untracked() });
                    }
                }>"set image"</button>
            </div>
            <div class="action-row">
                <button id="action-compact" on:click=move |_| send(DemoAction::Compact)
                    title="Compact etcd's history: a watch from an older RV gets 410 Gone">"compact"</button>
                <button id="action-drop" on:click=move |_| send(DemoAction::DropWatches)
                    title="Close every watch: each watcher re-watches or relists">"drop watches"</button>
                <button id="action-slow" on:click=move |_| send(DemoAction::SlowWatcher)
                    title="Make one watcher too slow: the dispatcher waits for it at most its time budget, then closes it">"slow watcher"</button>
            </div>
        </section>
    }
}

/// A select's options, one per value, each kept while its value is offered:
/// the option the viewer chose stays the same element, and stays chosen,
/// however the list around it changes. Options stay in the order they were
/// first offered, new ones last: a busy demo adds and removes objects every
/// second, and a sorted list would move most of its options each time.
#[component]
fn Options(values: Memo<Vec<String>>, chosen: RwSignal<String>) -> impl IntoView {
    let ordered = Memo::new(move |before: Option<&Vec<String>>| {
        values.with(|fresh| stable_order(before.map_or(&[][..], Vec::as_slice), fresh))
    });
    view! {
        <For each=move || ordered.get() key=|v| v.clone() let:v>
            <option value=v.clone() selected=chosen.get_untracked() == v>{v.clone()}</option>
        </For>
    }
}

/// `fresh` with the values also in `before` in `before`'s order, followed by
/// the new ones in `fresh`'s order.
fn stable_order(before: &[String], fresh: &[String]) -> Vec<String> {
    let offered: std::collections::HashSet<&String> = fresh.iter().collect();
    let kept: std::collections::HashSet<&String> = before.iter().collect();
    before
        .iter()
        .filter(|v| offered.contains(v))
        .chain(fresh.iter().filter(|v| !kept.contains(v)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::stable_order;

    #[test]
    fn options_keep_their_order_and_new_ones_come_last() {
        let list = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(stable_order(&[], &list("b a")), list("b a"));
        assert_eq!(
            stable_order(&list("c a b"), &list("a b d c e")),
            list("c a b d e")
        );
        assert_eq!(stable_order(&list("c a b"), &list("b x")), list("b x"));
    }
}
