//! What the image and manifest tests share: the `deploy/` kustomize base
//! copied with a viewers' token, kubectl, and the image's root filesystem
//! unpacked and run as a container runtime would run it, without one.
//!
//! Containers cannot always run here (podman's crun refuses to set rlimits
//! on these machines), so [`Rootfs::spawn`] does what matters of a runtime
//! by hand: a private mount namespace (`unshare --mount`), the unpacked root
//! bind-mounted read-only, the service account's files (if any) bind-mounted
//! read-only at the path the kubelet uses, then `chroot` as UID 65532.
//! Network and PID namespaces are the host's: the binary listens on loopback.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use tempfile::TempDir;

/// Where the kubelet mounts a pod's service account token, CA and namespace.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The image's user, as `make image` sets it.
pub const IMAGE_USER: &str = "65532:65532";

/// The workspace's version (`[workspace.package] version` in Cargo.toml),
/// which `make image` uses as the image's tag.
pub fn workspace_version() -> String {
    let manifest = std::fs::read_to_string(crate::workspace().join("Cargo.toml")).unwrap();
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml has a workspace version")
        .to_string()
}

/// The image `make image` builds: `$WATCHLIFE_IMAGE`, or its default tag.
pub fn image_name() -> String {
    std::env::var("WATCHLIFE_IMAGE")
        .unwrap_or_else(|_| format!("localhost/watchlife:{}", workspace_version()))
}

/// Whether buildah is installed. The image tests run only where it is
/// (`make test`'s set-up installs it); elsewhere they say so and pass.
pub fn buildah_present() -> bool {
    Command::new("buildah")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A copy of `deploy/` (the component folders included) at `deploy/` in a
/// temporary folder, with `token.env` holding the given token, so that tests
/// never write the repository's own token file. Overlays go beside it.
pub struct DeployCopy {
    dir: TempDir,
}

impl DeployCopy {
    /// The copy of `deploy/`.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("deploy")
    }

    /// An overlay beside the copy, `NAME/kustomization.yaml` holding `text`
    /// (which names the base as `../deploy`).
    pub fn overlay(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("kustomization.yaml"), text).unwrap();
        dir
    }
}

/// See [`DeployCopy`].
pub fn deploy_copy(token: &str) -> DeployCopy {
    let dir = tempfile::Builder::new()
        .prefix("watchlife-deploy-")
        .tempdir()
        .unwrap();
    let copy = DeployCopy { dir };
    copy_dir(&crate::workspace().join("deploy"), &copy.path());
    std::fs::write(copy.path().join("token.env"), format!("token={token}\n")).unwrap();
    copy
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "token.env" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `kubectl ARGS`, against `kubeconfig` when given.
pub fn kubectl(kubeconfig: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new("kubectl");
    if let Some(k) = kubeconfig {
        command.arg("--kubeconfig").arg(k);
    }
    command.args(args).output().expect("kubectl runs")
}

/// [`kubectl`] that must succeed; returns its stdout.
pub fn kubectl_ok(kubeconfig: Option<&Path>, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args);
    assert!(
        out.status.success(),
        "kubectl {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The objects `kubectl kustomize DIR` renders, as JSON values.
pub fn kustomize(dir: &Path) -> Vec<Value> {
    let yaml = kubectl_ok(None, &["kustomize", dir.to_str().unwrap()]);
    serde_saphyr::from_multiple(&yaml).expect("kubectl kustomize prints YAML")
}

/// The image, exported with buildah and unpacked: its configuration and a
/// root filesystem (owned by root, as the layers say).
pub struct Rootfs {
    /// The OCI image configuration (`config.User`, `config.Labels`, …).
    pub config: Value,
    /// Holds the exported image and the root.
    dir: TempDir,
}

impl Rootfs {
    /// Exports `image` from buildah's store (the vfs driver `make image`
    /// uses) as an OCI layout and unpacks its layers in order.
    pub fn unpack(image: &str) -> Rootfs {
        let dir = tempfile::Builder::new()
            .prefix("watchlife-image-")
            .tempdir()
            .unwrap();
        let layout = dir.path().join("oci");
        let out = Command::new("buildah")
            .args(["--storage-driver", "vfs", "push", "--quiet", image])
            .arg(format!("oci:{}:image", layout.display()))
            .output()
            .expect("buildah runs");
        assert!(
            out.status.success(),
            "buildah push {image}: {} (build it with `make image`)",
            String::from_utf8_lossy(&out.stderr)
        );
        let blob = |digest: &Value| {
            let digest = digest.as_str().unwrap();
            let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
            layout.join("blobs/sha256").join(hex)
        };
        let json = |path: PathBuf| -> Value {
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
        };
        let index = json(layout.join("index.json"));
        let manifest = json(blob(&index["manifests"][0]["digest"]));
        let config = json(blob(&manifest["config"]["digest"]));
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        for layer in manifest["layers"].as_array().unwrap() {
            let media = layer["mediaType"].as_str().unwrap();
            let flag = if media.ends_with("gzip") {
                "-xzf"
            } else {
                "-xf"
            };
            let status = Command::new("tar")
                .arg(flag)
                .arg(blob(&layer["digest"]))
                .arg("-C")
                .arg(&root)
                .arg("--numeric-owner")
                .status()
                .unwrap();
            assert!(status.success(), "unpacking layer {media}");
        }
        Rootfs { config, dir }
    }

    /// The unpacked root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Every path in the root (relative, files and folders), sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut paths = Vec::new();
        walk(&self.root(), &self.root(), &mut paths);
        paths.sort();
        paths
    }

    /// Runs the image's entrypoint with `args` as a runtime would (see the
    /// module doc): read-only root, UID and GID from the image's `User`,
    /// `env` and nothing else in the environment; `service_account`, when
    /// given, mounted read-only at [`SERVICE_ACCOUNT_DIR`]. Output goes to
    /// `log`. The process (and its child) is killed when the guard drops.
    pub fn spawn(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        service_account: Option<&Path>,
        log: &Path,
    ) -> Running {
        let root = self.root();
        let entrypoint: Vec<String> = self.config["config"]["Entrypoint"]
            .as_array()
            .expect("the image has an entrypoint")
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let user = self.config["config"]["User"].as_str().unwrap();
        let mut script = String::from(
            "set -e\nmount --bind \"$ROOT\" \"$ROOT\"\nmount -o remount,bind,ro \"$ROOT\"\n",
        );
        if service_account.is_some() {
            // The mount point is the runtime's to make, before the root
            // turns read-only; the unpacked root is ours to change.
            std::fs::create_dir_all(root.join(SERVICE_ACCOUNT_DIR.trim_start_matches('/')))
                .unwrap();
            script.push_str(&format!(
                "mount --bind \"$SA\" \"$ROOT{SERVICE_ACCOUNT_DIR}\"\nmount -o remount,bind,ro \"$ROOT{SERVICE_ACCOUNT_DIR}\"\n"
            ));
        }
        // The shell stays, as the first process of a PID namespace of its
        // own, and runs the entrypoint as its child. `--kill-child` kills
        // the shell when `unshare` dies, and the kernel then kills every
        // process in the namespace. It could not kill the entrypoint
        // itself: changing to the image's user clears a process's
        // parent-death signal, so an entrypoint `exec`ed from here outlived
        // its test.
        script.push_str("chroot --userspec=\"$USERSPEC\" \"$ROOT\" \"$@\" &\nwait \"$!\"\n");
        let log_file = std::fs::File::create(log).unwrap();
        let mut command = Command::new("unshare");
        command
            .args([
                "--mount",
                "--propagation",
                "private",
                "--pid",
                "--fork",
                "--kill-child",
            ])
            .args(["sh", "-c", &script, "sh"])
            .args(&entrypoint)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("ROOT", &root)
            .env("USERSPEC", user);
        if let Some(sa) = service_account {
            command.env("SA", sa);
        }
        // `make test`'s mark, by which it finds a process a test left behind.
        if let Ok(mark) = std::env::var("WATCHLIFE_TEST_RUN") {
            command.env("WATCHLIFE_TEST_RUN", mark);
        }
        // The runtime's environment is the image's plus the pod's; the
        // mount helpers above need PATH, which the process keeps (as the
        // image's own config sets one too).
        for (k, v) in env {
            command.env(k, v);
        }
        let child = command
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("unshare runs (util-linux)");
        Running { child }
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        out.push(path.strip_prefix(root).unwrap().display().to_string());
        if entry.file_type().unwrap().is_dir() {
            walk(root, &path, out);
        }
    }
}

/// The image's process, killed (with its mount namespace) on drop.
pub struct Running {
    child: Child,
}

impl Running {
    /// The id (in the host's PID namespace) of the entrypoint's process:
    /// the child of the shell that is the child of `unshare --fork` (the
    /// shell runs `chroot`, which execs the entrypoint).
    pub fn entrypoint_pid(&self) -> Option<u32> {
        let shell = first_child(self.child.id())?;
        first_child(shell)
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

/// The first child of process `pid`, if it has one.
fn first_child(pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

impl Drop for Running {
    fn drop(&mut self) {
        // `--kill-child`: the namespace's first process, and with it every
        // process in the namespace, dies with unshare.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `Uid:` of a process: real, effective, saved and filesystem UIDs.
pub fn uids(pid: u32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The program interpreter (dynamic loader) an ELF file asks for: its
/// `PT_INTERP` entry, or `None` for a static binary.
pub fn elf_interpreter(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is an ELF file", path.display());
    assert_eq!(bytes[4], 2, "64-bit");
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let phoff = u64_at(0x20);
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    const PT_INTERP: u32 = 3;
    (0..phnum).find_map(|i| {
        let at = phoff + i * phentsize;
        if u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) != PT_INTERP {
            return None;
        }
        // p_offset and p_filesz; the path ends with a NUL.
        let (offset, size) = (u64_at(at + 8), u64_at(at + 32));
        let path = &bytes[offset..offset + size];
        Some(String::from_utf8_lossy(path.strip_suffix(&[0]).unwrap_or(path)).into_owned())
    })
}
