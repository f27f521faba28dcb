//! A workload client of etcd: a transfer is a read of both accounts, then one txn that holds only if
//! neither account changed since (their mod_revision) and puts both new balances and the history key.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Context;
use serde_json::{Value, json};

use super::http::request;
use super::kv;
use crate::proof::powercut::db::{Client, Transfer};

/// One client; connections are per request, so it is only the address and the shared record of the
/// highest revision etcd acknowledged.
pub struct EtcdClient {
    addr: SocketAddr,
    acked_revision: Arc<AtomicI64>,
}

impl EtcdClient {
    /// A client of etcd at `addr`, raising `acked_revision` to every acknowledged txn's revision.
    pub fn new(addr: SocketAddr, acked_revision: Arc<AtomicI64>) -> EtcdClient {
        EtcdClient { addr, acked_revision }
    }
}

/// The txn that moves `t.amount` between accounts read as `from` and `to` (the same pair when
/// `t.from == t.to`: etcd refuses two puts of one key in a txn).
pub fn transfer_txn(t: &Transfer, from: &kv::Kv, to: &kv::Kv) -> anyhow::Result<Value> {
    let balance =
        |kv: &kv::Kv| kv.value.parse::<i64>().with_context(|| format!("balance of {}: {:?}", kv.key, kv.value));
    let mut compare = vec![kv::unchanged_since(&from.key, from.mod_revision)];
    let mut success = Vec::new();
    if t.from == t.to {
        success.push(kv::put(&from.key, &balance(from)?.to_string()));
    } else {
        compare.push(kv::unchanged_since(&to.key, to.mod_revision));
        success.push(kv::put(&from.key, &(balance(from)? - t.amount).to_string()));
        success.push(kv::put(&to.key, &(balance(to)? + t.amount).to_string()));
    }
    success.push(kv::put(&kv::history_key(t.id), &kv::history_value(t)));
    Ok(json!({ "compare": compare, "success": success }))
}

impl EtcdClient {
    /// Both accounts, as one consistent read (a txn of two ranges, no compare).
    fn read_accounts(&self, t: &Transfer) -> anyhow::Result<(kv::Kv, kv::Kv)> {
        let (from_key, to_key) = (kv::account_key(t.from), kv::account_key(t.to));
        let ranges = json!({ "success": [
            { "request_range": kv::key_range(&from_key) },
            { "request_range": kv::key_range(&to_key) } ] });
        let answer = request(self.addr, "POST", "/v3/kv/txn", &ranges)?;
        let responses = answer["responses"].as_array().context("etcd's read txn has no responses")?;
        let range =
            |i: usize, key: &str| kv::single(&responses.get(i).cloned().unwrap_or_default()["response_range"], key);
        Ok((range(0, &from_key)?, range(1, &to_key)?))
    }
}

impl Client for EtcdClient {
    fn transfer(&mut self, transfer: &Transfer) -> anyhow::Result<bool> {
        let (from, to) = self.read_accounts(transfer)?;
        let txn = transfer_txn(transfer, &from, &to)?;
        let answer = request(self.addr, "POST", "/v3/kv/txn", &txn)?;
        // `succeeded` is left out of the JSON when false (protobuf's default value).
        if !answer["succeeded"].as_bool().unwrap_or(false) {
            return Ok(false);
        }
        self.acked_revision.fetch_max(kv::header_revision(&answer)?, Ordering::SeqCst);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(n: u32, balance: i64, rev: i64) -> kv::Kv {
        kv::Kv { key: kv::account_key(n), value: balance.to_string(), mod_revision: rev }
    }

    fn decoded_puts(txn: &Value) -> Vec<(String, String)> {
        let b64 =
            |v: &Value| String::from_utf8(super::super::http::base64_decode(v.as_str().unwrap()).unwrap()).unwrap();
        txn["success"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (b64(&p["request_put"]["key"]), b64(&p["request_put"]["value"])))
            .collect()
    }

    #[test]
    fn a_transfer_compares_both_revisions_and_puts_both_balances_and_the_history() {
        let t = Transfer { id: 9, from: 1, to: 2, amount: 40 };
        let txn = transfer_txn(&t, &account(1, 1000, 5), &account(2, 500, 7)).unwrap();
        let revs: Vec<&str> =
            txn["compare"].as_array().unwrap().iter().map(|c| c["mod_revision"].as_str().unwrap()).collect();
        assert_eq!(revs, ["5", "7"]);
        assert_eq!(
            decoded_puts(&txn),
            [
                ("acct/00000001".to_string(), "960".to_string()),
                ("acct/00000002".to_string(), "540".to_string()),
                (kv::history_key(9), "1 2 40".to_string())
            ]
        );
    }

    #[test]
    fn a_transfer_to_the_same_account_puts_it_once_unchanged() {
        let t = Transfer { id: 3, from: 4, to: 4, amount: 10 };
        let txn = transfer_txn(&t, &account(4, 700, 2), &account(4, 700, 2)).unwrap();
        assert_eq!(txn["compare"].as_array().unwrap().len(), 1);
        assert_eq!(
            decoded_puts(&txn),
            [("acct/00000004".to_string(), "700".to_string()), (kv::history_key(3), "4 4 10".to_string())]
        );
    }
}
