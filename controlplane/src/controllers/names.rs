//! Names controllers give what they create: `web-5d9c8bf7b4` for a
//! ReplicaSet (its pod template's hash), `web-5d9c8bf7b4-x2kqn` for a pod.

use serde_json::Value;

/// The alphabet Kubernetes uses in generated names: no vowels (no words) and
/// no look-alike characters (0/o, 1/l, 3/e).
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Letters of a generated pod name suffix, as `generateName` makes them.
pub const POD_SUFFIX_LEN: usize = 5;

/// 32-bit FNV-1a, the hash the deployment controller uses for templates.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash: u32, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The `pod-template-hash` of a pod template: the FNV-1a hash of its JSON
/// (keys sorted, so equal templates hash equally), written in decimal and
/// each digit mapped into the safe alphabet, as the deployment controller
/// encodes it.
pub fn template_hash(template: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(template, &mut canonical);
    fnv32a(canonical.as_bytes())
        .to_string()
        .bytes()
        .map(|b| SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// A pod name suffix that looks random but is a function of `seed` and `n`,
/// so a run of the demo can be replayed.
pub fn pod_suffix(seed: &str, n: u64) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    bytes.extend_from_slice(&n.to_le_bytes());
    let mut x = u64::from(fnv32a(&bytes)) | (u64::from(fnv32a(&n.to_be_bytes())) << 32);
    (0..POD_SUFFIX_LEN)
        .map(|_| {
            let c = SAFE_ALPHABET[(x % SAFE_ALPHABET.len() as u64) as usize] as char;
            x /= SAFE_ALPHABET.len() as u64;
            c
        })
        .collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv_matches_the_reference_values() {
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
    }

    #[test]
    fn template_hash_depends_on_content_not_key_order() {
        let a = json!({"spec": {"image": "nginx:0.5.0", "name": "web"}});
        let b: Value =
            serde_json::from_str(r#"{"spec":{"name":"web","image":"nginx:0.5.0"}}"#).unwrap();
        let c = json!({"spec": {"image": "nginx:1.5.3", "name": "web"}});
        assert_eq!(template_hash(&a), template_hash(&b));
        assert_ne!(template_hash(&a), template_hash(&c));
        assert!(
            template_hash(&a)
                .bytes()
                .all(|ch| SAFE_ALPHABET.contains(&ch))
        );
    }

    #[test]
    fn pod_suffixes_are_short_safe_and_vary() {
        let s: Vec<_> = (0..50).map(|n| pod_suffix("web-abc", n)).collect();
        assert!(s.iter().all(|x| x.len() == POD_SUFFIX_LEN));
        let distinct: std::collections::HashSet<_> = s.iter().collect();
        assert_eq!(distinct.len(), s.len());
        assert_eq!(pod_suffix("web-abc", 7), pod_suffix("web-abc", 7));
    }
}
