//! The server options of a MariaDB cell: the user's `--set KEY=VALUE` over the driver's defaults, and
//! the check that `mariadbd` takes every one of them as given before anything is started.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

/// Options syncbench sets itself (where the server lives and who runs it): not the user's to change.
const RESERVED: [&str; 14] = [
    "tmpdir",
    "datadir",
    "socket",
    "pid-file",
    "user",
    "skip-networking",
    "networking",
    "log-error",
    "port",
    "basedir",
    "no-defaults",
    "defaults-file",
    "defaults-extra-file",
    "bind-address",
];

/// The driver's defaults, each overridden by a `--set` of the same key. They shorten the server's flushing
/// so that cuts land during data-page writes too, not only redo-log writes: a small redo log (checkpoints
/// come often), a small buffer pool, a page cleaner that keeps almost no page dirty and may write fast, no
/// neighbour flushing; a lock wait that gives up soon (`Ok(false)`, not a stuck client); no buffer pool
/// dump or load (start and stop stay fast). None of them changes what a commit waits for.
const FLUSH_DEFAULTS: [(&str, &str); 10] = [
    ("innodb-log-file-size", "8M"),
    ("innodb-buffer-pool-size", "32M"),
    ("innodb-max-dirty-pages-pct", "1"),
    ("innodb-max-dirty-pages-pct-lwm", "0.001"),
    ("innodb-io-capacity", "2000"),
    ("innodb-io-capacity-max", "4000"),
    ("innodb-flush-neighbors", "0"),
    ("innodb-lock-wait-timeout", "5"),
    ("innodb-buffer-pool-load-at-startup", "OFF"),
    ("innodb-buffer-pool-dump-at-shutdown", "OFF"),
];

/// The options a cell's server runs with, keys in mariadbd's dashed form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The driver's defaults, then the user's settings (a user's key replaces the default of that key).
    options: Vec<(String, String)>,
    /// The user's keys, dashed: what a refusal is blamed on.
    user_keys: Vec<String>,
}

/// `innodb_flush_method` and `innodb-flush-method` are the same option to mariadbd.
pub fn dashed(key: &str) -> String {
    key.trim().to_ascii_lowercase().replace('_', "-")
}

impl Settings {
    /// The user's `KEY=VALUE` pairs over the defaults; a malformed or reserved key is a usage error.
    pub fn new(user: &[(String, String)]) -> anyhow::Result<Settings> {
        let mut options: Vec<(String, String)> =
            FLUSH_DEFAULTS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut user_keys = Vec::new();
        for (key, value) in user {
            let key = dashed(key);
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(crate::core::exit::usage(format!(
                    "--set {key}={value}: not a MariaDB option name (letters, digits, '_' or '-'); \
                     see `mariadbd --help --verbose`"
                )));
            }
            if RESERVED.contains(&key.as_str()) {
                return Err(crate::core::exit::usage(format!(
                    "--set {key}: syncbench sets this MariaDB option itself (the server runs in a private \
                     directory of its own); leave it out"
                )));
            }
            options.retain(|(k, _)| *k != key);
            options.push((key.clone(), value.trim().to_string()));
            user_keys.push(key);
        }
        Ok(Settings { options, user_keys })
    }

    /// The options as mariadbd arguments (`--key=value`).
    pub fn args(&self) -> Vec<String> {
        self.options.iter().map(|(k, v)| format!("--{k}={v}")).collect()
    }

    /// The value the cell runs `key` with (a user's or the default), if any.
    pub fn value(&self, key: &str) -> Option<&str> {
        let key = dashed(key);
        self.options.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// Ask `mariadbd` to parse every option without starting (`--help --verbose`): an unknown option, a
    /// value it refuses, ignores or adjusts is a usage error naming the `--set` it came from.
    pub fn check(&self, mariadbd: &Path) -> anyhow::Result<()> {
        let output = Command::new(mariadbd)
            .args(["--no-defaults", "--user=root"])
            .args(self.args())
            .args(["--help", "--verbose"])
            .output()
            .with_context(|| format!("running {} --help --verbose", mariadbd.display()))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if let Some(problem) = self.refusal(&stderr) {
            return Err(crate::core::exit::usage(problem));
        }
        if !output.status.success() {
            anyhow::bail!("{} --help --verbose failed ({}): {}", mariadbd.display(), output.status, stderr.trim());
        }
        Ok(())
    }

    /// The first complaint of mariadbd's option parser (its `[ERROR]` and `[Warning]` lines that name an
    /// option of ours), as one line naming the `--set` it is about.
    pub fn refusal(&self, stderr: &str) -> Option<String> {
        let complaint = |line: &&str| line.contains("[ERROR]") || line.contains("[Warning]");
        for line in stderr.lines().filter(complaint) {
            let words = line.split_once("] ").map_or(line, |(_, rest)| rest).trim();
            let blamed =
                self.user_keys.iter().find(|k| line.contains(k.as_str()) || line.contains(&k.replace('-', "_")));
            if let Some(key) = blamed {
                let value = self.value(key).unwrap_or_default();
                return Some(format!("--set {key}={value}: mariadbd does not take it as given ({words})"));
            }
            if line.contains("[ERROR]") {
                return Some(format!("mariadbd refuses the settings: {words}"));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> anyhow::Result<Settings> {
        Settings::new(&pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())
    }

    #[test]
    fn user_settings_replace_the_default_of_the_same_key_in_either_spelling() {
        let s = set(&[("innodb_log_file_size", "64M"), ("innodb_flush_method", "O_DSYNC")]).unwrap();
        assert_eq!(s.value("innodb-log-file-size"), Some("64M"));
        assert_eq!(s.value("innodb_flush_method"), Some("O_DSYNC"));
        let args = s.args();
        assert_eq!(args.iter().filter(|a| a.starts_with("--innodb-log-file-size=")).count(), 1);
        assert!(args.contains(&"--innodb-flush-method=O_DSYNC".to_string()));
        assert_eq!(s.value("innodb-max-dirty-pages-pct"), Some("1"));
    }

    #[test]
    fn reserved_and_malformed_keys_are_usage_errors() {
        for key in ["datadir", "socket", "log_error", "no-defaults"] {
            let e = set(&[(key, "/x")]).unwrap_err();
            assert!(e.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{key}");
            assert!(e.to_string().contains("syncbench sets this"), "{e}");
        }
        let e = set(&[("innodb flush", "1")]).unwrap_err();
        assert!(e.to_string().contains("not a MariaDB option name"), "{e}");
    }

    #[test]
    fn refusals_are_blamed_on_the_users_key() {
        let s = set(&[("innodb_doublewrite", "maybe"), ("sync_binlog", "-1")]).unwrap();
        let warn = "2026-11-28 21:14:32 0 [Warning] Could not increase number of max_open_files to more than 20000\n\
                    2026-11-28 21:14:32 0 [Warning] mariadbd: ignoring option '--innodb-doublewrite' due to invalid value 'maybe'\n";
        let line = s.refusal(warn).unwrap();
        assert!(line.starts_with("--set innodb-doublewrite=maybe: mariadbd does not take it"), "{line}");
        assert!(line.contains("ignoring option"), "{line}");
        let err = "2026-11-28 21:14:32 0 [ERROR] Incorrect unsigned value: '-1' for sync_binlog\n";
        assert!(s.refusal(err).unwrap().starts_with("--set sync-binlog=-1:"));
        let unknown = set(&[("innodb_bogus", "1")]).unwrap();
        let line = unknown.refusal("0 [ERROR] mariadbd: unknown variable 'innodb-bogus=1'\n").unwrap();
        assert!(line.contains("--set innodb-bogus=1") && line.contains("unknown variable"), "{line}");
        assert_eq!(s.refusal("0 [Warning] Could not increase number of max_open_files\n"), None);
    }
}
