//! Whether a panel is on screen, or about to be. A phone shows the pipeline
//! and little else: the event log, the object table, the demo actions and the
//! plots below it are off screen, and so are the fan-out's copies once it is
//! scrolled past. Redrawing them costs the phone its frames for nothing (see
//! [`crate::throttle::throttled_on_screen`] and
//! [`crate::throttle::clock_every_on_screen`]).

use leptos::html::Section;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use web_sys::{IntersectionObserver, IntersectionObserverEntry, IntersectionObserverInit};

/// How far beyond the viewport a panel counts as on screen: a screen's
/// height above and below. A panel is then drawn while it is scrolled
/// towards, before it shows, rather than for the frame after it shows.
const AHEAD: &str = "100% 0px";

/// The observer and the callback it calls, kept for as long as the panel.
type Watching = (IntersectionObserver, Closure<dyn FnMut(js_sys::Array)>);

/// True while some of the section `node` holds is in the viewport or within
/// [`AHEAD`] of it, as the browser's `IntersectionObserver` reports it; true
/// until its first report, so that a panel draws at once.
pub fn on_screen(node: NodeRef<Section>) -> ReadSignal<bool> {
    let (visible, set_visible) = signal(true);
    let watching = StoredValue::new_local(None::<Watching>);
    Effect::new(move |_| {
        let Some(element) = node.get() else {
            return;
        };
        let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
            // Several reports in one call: the last is the newest.
            let last = entries.iter().last();
            if let Some(entry) = last.and_then(|e| e.dyn_into::<IntersectionObserverEntry>().ok()) {
                set_visible.set(entry.is_intersecting());
            }
        });
        let options = IntersectionObserverInit::new();
        options.set_root_margin(AHEAD);
        let Ok(observer) =
            IntersectionObserver::new_with_options(callback.as_ref().unchecked_ref(), &options)
        else {
            return;
        };
        observer.observe(&element);
        // A section mounted again (inside a `<Show>`) gets a new observer: the
        // old one must stop before its callback is dropped with it.
        watching.update_value(|w| {
            if let Some((old, _)) = w.replace((observer, callback)) {
                old.disconnect();
            }
        });
    });
    on_cleanup(move || {
        watching.with_value(|w| {
            if let Some((observer, _)) = w {
                observer.disconnect();
            }
        });
    });
    visible
}
