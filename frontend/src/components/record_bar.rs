//! The live page's bar under the pipeline: record the stream from now on and
//! download it as a file that replays with no bridge (`make embed`'s page
//! plays it, from `?replay=URL` or dropped on it).

use crate::model::Model;
use crate::tape::Tape;
use leptos::prelude::*;

#[component]
pub fn RecordBar() -> impl IntoView {
    let model = expect_context::<Model>();
    let tape = expect_context::<Tape>();
    let record = move |_| {
        if !tape.recording.get_untracked() {
            if !tape.start(&model) {
                model.tell(
                    "nothing to record yet: the bridge has not answered".into(),
                    true,
                );
            }
            return;
        }
        match tape.stop_and_download() {
            Ok(()) => model.tell(
                "recording saved: drop it on the replay page (make embed) to play it with no bridge".into(),
                false,
            ),
            Err(why) => model.tell(why, true),
        }
    };
    view! {
        <section class="replay-bar live-tools" aria-label="Record">
            <button id="tape-record" on:click=record
                aria-pressed=move || tape.recording.get().to_string()
                title="Record the stream from now on, and download it as a file that replays with no bridge">
                {move || if tape.recording.get() {
                    format!("■ stop and download ({} frames)", tape.frames.get())
                } else {
                    "● record".to_string()
                }}
            </button>
        </section>
    }
}
