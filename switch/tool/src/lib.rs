//! What the workspace's small programs (dplab-fwd, dplab-linkem, dplab-wmedium) share on
//! their command line: `PROGRAM --config PATH`, a JSON file decoded into the program's typed
//! configuration (errors name the file and the field), one way to stop on an error, and
//! SIGINT/SIGTERM as a request to stop.

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// From now on SIGINT and SIGTERM only ask the program to stop (`stopping()`), so its main
/// loop ends and it writes its counters before it exits.
pub fn stop_on_signals() {
    pktio::sys::on_signals(&[libc::SIGINT, libc::SIGTERM], on_stop_signal);
}

/// Whether SIGINT or SIGTERM came since `stop_on_signals`.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// A program's configuration: decoded by serde, then checked for what its types cannot say.
pub trait Config: DeserializeOwned {
    fn check(&self) -> Result<(), String>;
}

/// Decodes and checks `text`; an error starts with the path of the field (`a_to_b.delay_us`).
pub fn parse<C: Config>(text: &str) -> Result<C, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let config: C = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", e.into_inner())
    })?;
    config.check()?;
    Ok(config)
}

/// `parse` of the file at `path`; an error starts with the file's path.
pub fn load<C: Config>(path: &Path) -> Result<C, String> {
    let at = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: {e}"))?;
    parse(&text).map_err(|e| format!("{at}: {e}"))
}

/// The configuration named by the program's only arguments, `--config PATH`; on an error
/// the program stops (`fail`).
pub fn config_from_args<C: Config>(program: &str) -> C {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match &args[..] {
        [flag, path] if flag == "--config" => {
            load(&PathBuf::from(path)).unwrap_or_else(|e| fail(program, &e))
        }
        _ => fail(program, &format!("usage: {program} --config PATH")),
    }
}

/// Prints `program: message` on standard error and exits with status 2.
pub fn fail(program: &str, message: &str) -> ! {
    eprintln!("{program}: {message}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Small {
        rate: f64,
    }

    impl Config for Small {
        fn check(&self) -> Result<(), String> {
            if self.rate > 0.0 {
                Ok(())
            } else {
                Err(format!("rate: must be > 0, not {}", self.rate))
            }
        }
    }

    #[test]
    fn errors_name_the_field_and_checks_run_after_decoding() {
        assert_eq!(parse::<Small>(r#"{"rate": 2}"#).unwrap().rate, 2.0);
        let e = parse::<Small>(r#"{"rate": "x"}"#).err().unwrap();
        assert!(e.starts_with("rate: invalid type"), "{e}");
        let e = parse::<Small>(r#"{"rate": 0}"#).err().unwrap();
        assert_eq!(e, "rate: must be > 0, not 0");
        let e = load::<Small>(Path::new("/nonexistent/x.json"))
            .err()
            .unwrap();
        assert!(e.starts_with("/nonexistent/x.json: "), "{e}");
    }
}
