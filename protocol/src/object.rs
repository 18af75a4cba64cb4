//! An object as the text of its JSON, shared and never re-encoded: the
//! informer keeps the same type ([`watchlife_object_json`]), so a frame
//! carries the very buffer the informer's Indexer holds.

pub use watchlife_object_json::ObjectJson;
