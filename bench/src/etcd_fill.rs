//! Objects written straight into etcd, as an apiserver stores them: many
//! objects fast, without the apiserver's admission or watch cache.

use std::sync::Arc;
use tokio::sync::Semaphore;

/// Puts in one etcd transaction (etcd allows 128 by default).
pub const PER_TXN: usize = 100;
/// Transactions in flight at once.
pub const TXNS_AT_ONCE: usize = 8;

/// Puts the objects `stored(i)` for `i` in `range` (each a key and its
/// value), [`PER_TXN`] to a transaction and [`TXNS_AT_ONCE`] transactions
/// at once; returns the values' bytes.
pub async fn put_all(
    etcd: &etcd_client::Client,
    range: std::ops::Range<usize>,
    stored: fn(usize) -> (String, String),
) -> Result<usize, String> {
    let gate = Arc::new(Semaphore::new(TXNS_AT_ONCE));
    let mut tasks = Vec::new();
    let mut json = 0;
    let end = range.end;
    for first in range.step_by(PER_TXN) {
        let ops: Vec<etcd_client::TxnOp> = (first..(first + PER_TXN).min(end))
            .map(|i| {
                let (key, value) = stored(i);
                json += value.len();
                etcd_client::TxnOp::put(key, value, None)
            })
            .collect();
        let permit = gate.clone().acquire_owned().await.expect("never closed");
        let mut kv = etcd.kv_client();
        tasks.push(tokio::spawn(async move {
            let result = kv.txn(etcd_client::Txn::new().and_then(ops)).await;
            drop(permit);
            result
                .map(|_| ())
                .map_err(|e| format!("an etcd transaction: {e}"))
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(json)
}

/// About `bytes` of lines `{prefix}.setting-NN.value=HEX`, different for
/// every `i` and the same on every run: the data of the `i`-th object of a
/// fill, as a service's properties file would hold it.
pub fn settings_text(i: usize, prefix: &str, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut k = 0;
    while text.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("{prefix}.setting-{k:02}.value={x:016x}\n"));
        k += 1;
    }
    text
}

/// The uid of the `i`-th object of a fill: one of its own, in a UUID's form.
pub fn uid(i: usize) -> String {
    format!("{:08x}-0000-4000-8000-{:012x}", i >> 16, i)
}
