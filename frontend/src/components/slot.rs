//! Slots: elements drawn once that show whichever item is at their place
//! (a token's lane, a row of a scrolled table). Under load items come and go
//! many times a second; a slot changes only the attributes and text that
//! differ, where drawing each item anew would create and remove elements.

use leptos::prelude::*;

/// One field of the item in `slot`, `None` while the slot is empty. Wakes
/// what reads it only when the field itself changed.
pub fn part<V, T>(
    slot: Signal<Option<V>>,
    get: impl Fn(&V) -> T + Send + Sync + 'static,
) -> Memo<Option<T>>
where
    V: Send + Sync + 'static,
    T: Clone + PartialEq + Send + Sync + 'static,
{
    Memo::new(move |_| slot.with(|item| item.as_ref().map(&get)))
}
