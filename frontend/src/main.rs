//! Mounts the app; everything else lives in the library.

fn main() {
    leptos::mount::mount_to_body(watchlife_frontend::App);
}
