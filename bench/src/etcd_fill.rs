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
