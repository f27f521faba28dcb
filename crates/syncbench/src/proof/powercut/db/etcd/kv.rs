//! The workload's keys in etcd and the gateway's JSON for them: accounts `acct/NNNNNNNN` (value: the
//! balance in decimal), history `hist/ID` (value: `FROM TO AMOUNT`), and the v3 requests and answers
//! (`/v3/kv/range`, `/v3/kv/txn`), where keys and values are base64 and 64-bit numbers are strings.

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::http::{base64_decode, base64_encode};
use crate::proof::powercut::db::Transfer;

/// The key prefix of the accounts.
pub const ACCOUNT_PREFIX: &str = "acct/";
/// The key prefix of the history.
pub const HISTORY_PREFIX: &str = "hist/";

/// The key of account `n`.
pub fn account_key(n: u32) -> String {
    format!("{ACCOUNT_PREFIX}{n:08}")
}

/// The key of history row `id`.
pub fn history_key(id: u64) -> String {
    format!("{HISTORY_PREFIX}{id:020}")
}

/// The value of a history row.
pub fn history_value(t: &Transfer) -> String {
    format!("{} {} {}", t.from, t.to, t.amount)
}

/// A range request for every key starting with `prefix` (range_end: the prefix with its last byte + 1).
pub fn prefix_range(prefix: &str) -> Value {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    json!({ "key": base64_encode(prefix.as_bytes()), "range_end": base64_encode(&end) })
}

/// A range request for one key.
pub fn key_range(key: &str) -> Value {
    json!({ "key": base64_encode(key.as_bytes()) })
}

/// A put request.
pub fn put(key: &str, value: &str) -> Value {
    json!({ "request_put": { "key": base64_encode(key.as_bytes()), "value": base64_encode(value.as_bytes()) } })
}

/// A compare that holds while `key` was last modified at `mod_revision`.
pub fn unchanged_since(key: &str, mod_revision: i64) -> Value {
    json!({ "key": base64_encode(key.as_bytes()), "target": "MOD", "result": "EQUAL", "mod_revision": mod_revision.to_string() })
}

/// A protobuf int64 as the gateway writes it (a string; absent means 0).
pub fn int64(value: &Value) -> anyhow::Result<i64> {
    match value {
        Value::Null => Ok(0),
        Value::String(s) => s.parse().with_context(|| format!("not an int64: {s:?}")),
        Value::Number(n) => n.as_i64().with_context(|| format!("not an int64: {n}")),
        other => bail!("not an int64: {other}"),
    }
}

/// The revision of the store in an answer's header.
pub fn header_revision(answer: &Value) -> anyhow::Result<i64> {
    int64(&answer["header"]["revision"])
}

/// One key-value pair of a range answer, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// The revision of its last modification.
    pub mod_revision: i64,
}

/// The pairs of a range answer (`kvs` is absent when nothing matched).
pub fn kvs(range_answer: &Value) -> anyhow::Result<Vec<Kv>> {
    let Some(list) = range_answer.get("kvs") else { return Ok(Vec::new()) };
    let list = list.as_array().context("kvs is not a list")?;
    list.iter()
        .map(|kv| {
            let text = |field: &str| -> anyhow::Result<String> {
                let encoded = kv[field].as_str().unwrap_or_default();
                String::from_utf8(base64_decode(encoded)?).with_context(|| format!("{field} is not UTF-8"))
            };
            Ok(Kv { key: text("key")?, value: text("value")?, mod_revision: int64(&kv["mod_revision"])? })
        })
        .collect()
}

/// The one pair of a single-key range, or an error naming the missing key.
pub fn single(range_answer: &Value, key: &str) -> anyhow::Result<Kv> {
    kvs(range_answer)?.into_iter().next().with_context(|| format!("key {key} is missing"))
}

/// The transfer a history pair records.
pub fn parse_history(kv: &Kv) -> anyhow::Result<Transfer> {
    let id = kv.key.strip_prefix(HISTORY_PREFIX).and_then(|n| n.parse().ok());
    let fields: Vec<&str> = kv.value.split(' ').collect();
    match (id, fields.as_slice()) {
        (Some(id), [from, to, amount]) => Ok(Transfer {
            id,
            from: from.parse().with_context(|| format!("history {}: {:?}", kv.key, kv.value))?,
            to: to.parse().with_context(|| format!("history {}: {:?}", kv.key, kv.value))?,
            amount: amount.parse().with_context(|| format!("history {}: {:?}", kv.key, kv.value))?,
        }),
        _ => bail!("unreadable history pair {}: {:?}", kv.key, kv.value),
    }
}

/// The balances of the account pairs, in account order; a gap or an unreadable balance is an error.
pub fn parse_balances(pairs: &[Kv], accounts: u32) -> anyhow::Result<Vec<i64>> {
    let mut balances = Vec::with_capacity(accounts as usize);
    for kv in pairs {
        let expected = account_key(balances.len() as u32);
        if kv.key != expected {
            bail!("account key {expected} is missing (next key is {})", kv.key);
        }
        balances.push(kv.value.parse().with_context(|| format!("balance of {}: {:?}", kv.key, kv.value))?);
    }
    if balances.len() != accounts as usize {
        bail!("{} of {accounts} accounts read back: the others are missing", balances.len());
    }
    Ok(balances)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_number_order() {
        assert_eq!(account_key(7), "acct/00000007");
        assert!(account_key(9) < account_key(10));
        assert!(history_key(99) < history_key(100));
        assert_eq!(prefix_range("acct/")["range_end"], base64_encode(b"acct0"));
    }

    #[test]
    fn range_answers_decode_and_absent_fields_are_zero_or_empty() {
        let answer = json!({"header":{"revision":"303"},"kvs":[
            {"key": base64_encode(b"acct/00000000"), "mod_revision":"12", "value": base64_encode(b"999990")},
            {"key": base64_encode(b"acct/00000001"), "mod_revision":"12", "value": base64_encode(b"1000010")}]});
        assert_eq!(header_revision(&answer).unwrap(), 303);
        let pairs = kvs(&answer).unwrap();
        assert_eq!(pairs[1], Kv { key: "acct/00000001".into(), value: "1000010".into(), mod_revision: 12 });
        assert_eq!(parse_balances(&pairs, 2).unwrap(), vec![999_990, 1_000_010]);
        assert!(kvs(&json!({"header":{}})).unwrap().is_empty());
        assert_eq!(int64(&Value::Null).unwrap(), 0);
        assert!(single(&json!({}), "acct/00000003").unwrap_err().to_string().contains("acct/00000003 is missing"));
    }

    #[test]
    fn gaps_and_garbage_are_errors() {
        let kv = |k: &str, v: &str| Kv { key: k.into(), value: v.into(), mod_revision: 1 };
        assert!(parse_balances(&[kv("acct/00000001", "5")], 2).unwrap_err().to_string().contains("acct/00000000"));
        assert!(parse_balances(&[kv("acct/00000000", "x")], 1).is_err());
        assert!(parse_balances(&[kv("acct/00000000", "5")], 2).is_err());
        let t = Transfer { id: 5, from: 1, to: 2, amount: 30 };
        assert_eq!(parse_history(&kv(&history_key(5), &history_value(&t))).unwrap(), t);
        assert!(parse_history(&kv("hist/x", "1 2 3")).is_err());
        assert!(parse_history(&kv(&history_key(5), "1 2")).is_err());
    }
}
