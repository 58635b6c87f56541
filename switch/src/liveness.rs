//! Port liveness for watch ports (P4Runtime 9.2.2): a thread reads each port's
//! operational state (IFF_RUNNING: up with carrier; a veth whose peer is down loses it)
//! every POLL and hands the set of down ports to every action profile, whose groups then
//! leave out the members watching one of them.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::shared::Shared;
use pktio::sys;
use std::os::fd::AsRawFd;

const POLL: Duration = Duration::from_millis(50);

/// The down ports last handed to the profiles, and the pipeline generation they were
/// handed to: what `port_status` reports (one switch per process).
static APPLIED: Mutex<Option<(BTreeSet<u32>, u64)>> = Mutex::new(None);

/// The ports the loaded pipeline's selectors take as down; None until the watch thread
/// has handed them to this pipeline (within one POLL of its loading).
pub fn applied_down_ports(shared: &Shared) -> Option<BTreeSet<u32>> {
    let generation = shared.generation.load(Ordering::Acquire);
    applied()
        .as_ref()
        .filter(|(_, at)| *at == generation)
        .map(|(down, _)| down.clone())
}

fn applied() -> MutexGuard<'static, Option<(BTreeSet<u32>, u64)>> {
    APPLIED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the interface `name` is running (up with carrier), asked on socket `fd`. An
/// interface the kernel does not know counts as down.
fn running(fd: i32, name: &str) -> bool {
    sys::interface_flags(fd, name).is_ok_and(|flags| flags & libc::IFF_RUNNING != 0)
}

fn down_ports(fd: i32, shared: &Shared) -> BTreeSet<u32> {
    shared
        .ports
        .iter()
        .filter(|(_, name)| !running(fd, name))
        .map(|(port, _)| *port)
        .collect()
}

/// Runs for the switch's life: applies the down ports when they change or a new pipeline
/// (with new, empty profiles) is loaded.
pub fn watch(shared: Arc<Shared>) {
    let Ok(socket) = sys::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) else {
        eprintln!("dplab-switch: no socket for port liveness; watch ports stay live");
        return;
    };
    let fd = socket.as_raw_fd();
    loop {
        let now = (
            down_ports(fd, &shared),
            shared.generation.load(Ordering::Acquire),
        );
        if applied().as_ref() != Some(&now) {
            if let Some(rt) = shared.lock_runtime().as_mut() {
                for profile in &mut rt.profiles {
                    profile.set_down_ports(&now.0);
                }
            }
            *applied() = Some(now);
        }
        std::thread::sleep(POLL);
    }
}
