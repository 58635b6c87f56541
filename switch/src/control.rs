//! The control channel: a Unix stream socket speaking line-delimited JSON (switch/PROTOCOL.md).
//!
//! One thread accepts clients, one thread per client reads requests and answers them in
//! order, and one thread writes data-plane events (packet-in, digest, idle timeout) to
//! every client that subscribed.

use std::cell::{Cell, RefCell};
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::meters::{ColourCounts, MeterCell, MeterConfig};
use crate::pipeline::{Event, Runtime};
use crate::pre::{CloneSession, Replica};
use crate::profiles::{GroupMember, ProfileError};
use crate::program::{self, Program, Scope, Unit};
use crate::shared::{add, get, signal, Client, Shared, SwitchCounters, PACKET_OUT_QUEUE_LIMIT};
use crate::tables::{ActionCall, Direct, EntryAction, FieldMatch, TableError};
use crate::values::{mask, read_bits, write_bits};

mod requests;
use requests::{
    field_matches, ActionSpec, Batch, CloneSessionKey, CloneSessionSet, CounterRead, CounterWrite,
    EntryCounterWrite, EntryMeterSet, GroupMemberSpec, GroupWrite, Hex, LoadPipeline, MatchItem,
    McastGroupKey, McastGroupSet, MemberWrite, MeterRead, MeterSet, ObjectRef, PacketOut,
    PacketOutField, ProfileRead, RegisterRead, RegisterWrite, ReplicaSpec, TableClear,
    TableDefault, TableRead, TableWrite, ValueSetRead, ValueSetWrite,
};

/// A request error with the P4Runtime-style code the client should report.
pub struct Failure {
    code: &'static str,
    message: String,
}

/// A request's result. It stays JSON: each command's result has its own shape
/// (switch/PROTOCOL.md), built with `json!` beside the handler that fills it.
type Reply = Result<Value, Failure>;

fn invalid(message: impl Into<String>) -> Failure {
    Failure {
        code: "INVALID_ARGUMENT",
        message: message.into(),
    }
}

fn not_found(message: impl Into<String>) -> Failure {
    Failure {
        code: "NOT_FOUND",
        message: message.into(),
    }
}

fn no_pipeline() -> Failure {
    Failure {
        code: "FAILED_PRECONDITION",
        message: "no pipeline loaded".into(),
    }
}

fn hex(v: u128) -> Value {
    Value::String(format!("{v:#x}"))
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The most opaque bytes (`meta`) the switch keeps for one table entry.
const META_LIMIT: usize = 1 << 20;

/// A request's `meta` (hex digits, opaque bytes for the control plane): `None` if absent.
fn optional_meta(meta: Option<&str>) -> Result<Option<Box<[u8]>>, Failure> {
    let Some(text) = meta else {
        return Ok(None);
    };
    let bytes = parse_hex_bytes(text, "meta")?;
    if bytes.len() > META_LIMIT {
        return Err(invalid(format!(
            "meta: {} bytes, more than the {META_LIMIT} an entry keeps",
            bytes.len()
        )));
    }
    Ok(Some(bytes.into_boxed_slice()))
}

fn parse_hex_bytes(text: &str, at: &str) -> Result<Vec<u8>, Failure> {
    if !text.len().is_multiple_of(2) {
        return Err(invalid(format!("{at}: odd number of hex digits")));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| invalid(format!("{at}: not hex at {i}")))
        })
        .collect()
}

/// Parses the IR's const entries' match lists (JSON in the IR: program.rs keeps them so)
/// with the protocol's match items.
pub fn parse_matches(items: &[Value], at: &str) -> Result<Vec<FieldMatch>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            serde_path_to_error::deserialize::<_, MatchItem>(m)
                .map(|item| FieldMatch::from(&item))
                .map_err(|e| match e.path().to_string().as_str() {
                    "." => format!("{at}: match[{i}]: {}", e.inner()),
                    path => format!("{at}: match[{i}].{path}: {}", e.inner()),
                })
        })
        .collect()
}

fn match_json(m: &FieldMatch) -> Value {
    match *m {
        FieldMatch::Exact(v) => json!({"kind": "exact", "v": hex(v)}),
        FieldMatch::Lpm(v, len) => json!({"kind": "lpm", "v": hex(v), "plen": len}),
        FieldMatch::Ternary(v, m) => json!({"kind": "ternary", "v": hex(v), "m": hex(m)}),
        FieldMatch::Range(lo, hi) => json!({"kind": "range", "lo": hex(lo), "hi": hex(hi)}),
        FieldMatch::Any => json!({"kind": "any"}),
    }
}

/// Finds the object a request names (`key`: its field) by P4Info id or name in a list.
fn resolve<T>(
    items: &[T],
    wanted: &ObjectRef,
    key: &str,
    id_name: impl Fn(&T) -> (u32, &str),
) -> Result<usize, Failure> {
    let found = match wanted {
        ObjectRef::Id(n) => items.iter().position(|t| id_name(t).0 as u64 == *n),
        ObjectRef::Name(s) => items.iter().position(|t| id_name(t).1 == s),
    };
    found.ok_or_else(|| {
        not_found(format!(
            "{key} {wanted} does not exist in the loaded program"
        ))
    })
}

fn table_error(e: TableError) -> Failure {
    let code = match e {
        TableError::Exists => "ALREADY_EXISTS",
        TableError::NotFound => "NOT_FOUND",
        TableError::Full => "RESOURCE_EXHAUSTED",
        _ => "INVALID_ARGUMENT",
    };
    Failure {
        code,
        message: e.to_string(),
    }
}

/// A request (switch/PROTOCOL.md), decoded by its `cmd` into the typed fields of that
/// command (control/requests.rs); its `id` is the connection's business, not the command's.
/// Commands without fields ignore any.
#[derive(Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
enum Request {
    Ping,
    Batch(Typed<Batch>),
    Hold,
    Release,
    Subscribe,
    LoadPipeline(Typed<LoadPipeline>),
    GetPipeline,
    Stats,
    PortStatus,
    PacketOut(Typed<PacketOut>),
    TableAdd(Typed<TableWrite>),
    TableModify(Typed<TableWrite>),
    TableDelete(Typed<TableWrite>),
    TableSetDefault(Typed<TableDefault>),
    TableResetDefault(Typed<TableDefault>),
    TableRead(Typed<TableRead>),
    TableClear(Typed<TableClear>),
    TableEntryCounterWrite(Typed<EntryCounterWrite>),
    TableEntryMeterSet(Typed<EntryMeterSet>),
    ProfileMemberAdd(Typed<MemberWrite>),
    ProfileMemberModify(Typed<MemberWrite>),
    ProfileMemberDelete(Typed<MemberWrite>),
    ProfileMemberRead(Typed<ProfileRead>),
    ProfileGroupAdd(Typed<GroupWrite>),
    ProfileGroupModify(Typed<GroupWrite>),
    ProfileGroupDelete(Typed<GroupWrite>),
    ProfileGroupRead(Typed<ProfileRead>),
    CounterRead(Typed<CounterRead>),
    CounterWrite(Typed<CounterWrite>),
    MeterSet(Typed<MeterSet>),
    MeterRead(Typed<MeterRead>),
    RegisterRead(Typed<RegisterRead>),
    RegisterWrite(Typed<RegisterWrite>),
    McastGroupSet(Typed<McastGroupSet>),
    McastGroupDelete(Typed<McastGroupKey>),
    McastGroupRead(Typed<McastGroupKey>),
    ValueSetWrite(Typed<ValueSetWrite>),
    ValueSetRead(Typed<ValueSetRead>),
    CloneSessionSet(Typed<CloneSessionSet>),
    CloneSessionDelete(Typed<CloneSessionKey>),
    CloneSessionRead(Typed<CloneSessionKey>),
    /// Any other `cmd`: answered UNIMPLEMENTED, naming it.
    #[serde(other)]
    Unknown,
}

/// A command's fields decoded into `T`, the request's `id` left out. An internally tagged
/// enum hands its variants buffered content, whose errors lose the path of a bad field:
/// decoding the fields through `serde_path_to_error` keeps it in the message
/// (`requests: invalid type: ...`).
struct Typed<T>(T);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Typed<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // The fields are read as JSON first only to be decoded again with their path.
        let mut fields = Value::deserialize(d)?;
        if let Some(object) = fields.as_object_mut() {
            object.remove("id");
        }
        serde_path_to_error::deserialize(fields)
            .map(Typed)
            .map_err(|e| match e.path().to_string().as_str() {
                "." => serde::de::Error::custom(e.inner()),
                path => serde::de::Error::custom(format_args!("{path}: {}", e.inner())),
            })
    }
}

/// How long a client may hold the runtime without sending its next request: a server that
/// hangs mid-batch must not stop the data plane for longer.
const HOLD_LIMIT: Duration = Duration::from_secs(2);

type RuntimeGuard<'a> = MutexGuard<'a, Option<Runtime>>;

struct Handler<'a> {
    shared: &'a Shared,
    /// The runtime this client holds (`hold` .. `release`): its requests use it, the data
    /// plane and other clients wait, so the data plane sees the held requests all at once.
    held: RefCell<Option<RuntimeGuard<'a>>>,
    /// Set when a hold was given up after HOLD_LIMIT; the `release` answers it.
    hold_expired: Cell<bool>,
}

impl<'a> Handler<'a> {
    /// Runs `f` on the runtime: the held one, or the shared one locked for this request.
    fn with_guard<R>(&self, f: impl FnOnce(&mut Option<Runtime>) -> R) -> R {
        if let Some(guard) = self.held.borrow_mut().as_mut() {
            return f(guard);
        }
        f(&mut self.shared.lock_runtime())
    }

    fn with_runtime(&self, f: impl FnOnce(&mut Runtime) -> Reply) -> Reply {
        self.with_guard(|slot| match slot.as_mut() {
            Some(rt) => f(rt),
            None => Err(no_pipeline()),
        })
    }

    /// `hold`: takes the runtime for this client until `release` (switch/PROTOCOL.md).
    fn hold(&self) -> Reply {
        if self.held.borrow().is_some() {
            return Err(Failure {
                code: "FAILED_PRECONDITION",
                message: "this client already holds the runtime".into(),
            });
        }
        self.hold_expired.set(false);
        *self.held.borrow_mut() = Some(self.shared.lock_runtime());
        Ok(Value::Null)
    }

    /// `release`: the held requests take effect for the data plane, all at once.
    fn release(&self) -> Reply {
        if self.held.borrow_mut().take().is_some() {
            return Ok(Value::Null);
        }
        let message = if self.hold_expired.replace(false) {
            format!(
                "the hold was given up after {} s without a request: the data plane saw \
                 the requests since `hold` one by one",
                HOLD_LIMIT.as_secs()
            )
        } else {
            "this client holds nothing to release".into()
        };
        Err(Failure {
            code: "FAILED_PRECONDITION",
            message,
        })
    }

    /// Gives up a hold whose client sent nothing for HOLD_LIMIT.
    fn expire_hold(&self) {
        if self.held.borrow_mut().take().is_some() {
            self.hold_expired.set(true);
        }
    }

    fn holding(&self) -> bool {
        self.held.borrow().is_some()
    }

    /// Answers one request. It arrives as JSON: its `id` is echoed whatever JSON it is, and
    /// a request in a `batch` stays JSON until it runs; `Request` decodes the rest here.
    fn handle(&self, req: &Value, client: &Client) -> Reply {
        let cmd = req
            .get("cmd")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("missing \"cmd\""))?;
        let request = Request::deserialize(req).map_err(|e| invalid(format!("{cmd}: {e}")))?;
        match request {
            Request::Ping => Ok(json!("pong")),
            Request::Batch(Typed(batch)) => self.batch(batch, client),
            Request::Hold => self.hold(),
            Request::Release => self.release(),
            Request::Subscribe => {
                client.subscribed.store(true, Ordering::Relaxed);
                Ok(Value::Null)
            }
            Request::LoadPipeline(Typed(load)) => self.load_pipeline(load),
            Request::GetPipeline => {
                self.with_runtime(|rt| Ok(json!({"program": rt.prog.name, "tag": rt.tag})))
            }
            Request::Stats => Ok(self.stats()),
            Request::PortStatus => Ok(self.port_status()),
            Request::PacketOut(Typed(out)) => self.packet_out(out),
            Request::TableAdd(Typed(w))
            | Request::TableModify(Typed(w))
            | Request::TableDelete(Typed(w)) => {
                self.with_runtime(|rt| table_write(rt, &w, cmd, self.now()))
            }
            Request::TableSetDefault(Typed(d)) | Request::TableResetDefault(Typed(d)) => {
                self.with_runtime(|rt| table_default(rt, &d, cmd))
            }
            Request::TableRead(Typed(r)) => {
                let counters = &self.shared.counters;
                self.with_runtime(|rt| table_read(rt, &r, self.now(), counters))
            }
            Request::ProfileMemberAdd(Typed(w))
            | Request::ProfileMemberModify(Typed(w))
            | Request::ProfileMemberDelete(Typed(w)) => {
                self.with_runtime(|rt| member_write(rt, &w, cmd))
            }
            Request::ProfileGroupAdd(Typed(w))
            | Request::ProfileGroupModify(Typed(w))
            | Request::ProfileGroupDelete(Typed(w)) => {
                self.with_runtime(|rt| group_write(rt, &w, cmd, &self.shared.ports))
            }
            Request::ProfileMemberRead(Typed(r)) | Request::ProfileGroupRead(Typed(r)) => {
                self.with_runtime(|rt| profile_read(rt, &r, cmd))
            }
            Request::TableClear(Typed(c)) => self.with_runtime(|rt| table_clear(rt, &c)),
            Request::TableEntryCounterWrite(Typed(w)) => {
                self.with_runtime(|rt| entry_counter_write(rt, &w))
            }
            Request::TableEntryMeterSet(Typed(w)) => {
                self.with_runtime(|rt| entry_meter_set(rt, &w, self.now()))
            }
            Request::CounterRead(Typed(r)) => self.with_runtime(|rt| counter_read(rt, &r)),
            Request::CounterWrite(Typed(w)) => self.with_runtime(|rt| counter_write(rt, &w)),
            Request::MeterSet(Typed(w)) => self.with_runtime(|rt| meter_set(rt, &w, self.now())),
            Request::MeterRead(Typed(r)) => self.with_runtime(|rt| meter_read(rt, &r)),
            Request::RegisterRead(Typed(r)) => self.with_runtime(|rt| register_read(rt, &r)),
            Request::RegisterWrite(Typed(w)) => self.with_runtime(|rt| register_write(rt, &w)),
            Request::McastGroupSet(Typed(w)) => self.with_runtime(|rt| mcast_group_set(rt, &w)),
            Request::McastGroupDelete(Typed(k)) => {
                self.with_runtime(|rt| mcast_group_delete(rt, k.group))
            }
            Request::McastGroupRead(Typed(k)) => {
                self.with_runtime(|rt| mcast_group_read(rt, k.group))
            }
            Request::ValueSetWrite(Typed(w)) => self.with_runtime(|rt| value_set_write(rt, &w)),
            Request::ValueSetRead(Typed(r)) => self.with_runtime(|rt| value_set_read(rt, &r)),
            Request::CloneSessionSet(Typed(w)) => self.with_runtime(|rt| clone_session_set(rt, &w)),
            Request::CloneSessionDelete(Typed(k)) => {
                self.with_runtime(|rt| clone_session_delete(rt, k.session))
            }
            Request::CloneSessionRead(Typed(k)) => {
                self.with_runtime(|rt| clone_session_read(rt, k.session))
            }
            Request::Unknown => Err(Failure {
                code: "UNIMPLEMENTED",
                message: format!("unknown cmd {cmd:?}"),
            }),
        }
    }

    fn now(&self) -> u64 {
        self.shared.now_ns()
    }

    /// `batch`: runs `requests` in order, each as if sent on its own (a `hold` among them
    /// holds the runtime for those after it), and answers them all in one reply: one
    /// answer per request run. With `stop_on_error` the first failure ends the batch (the
    /// rest are not run, so a `release` after it is not either).
    fn batch(&self, batch: Batch, client: &Client) -> Reply {
        let mut answers = Vec::with_capacity(batch.requests.len());
        for sub in &batch.requests {
            let reply = match sub.get("cmd").and_then(Value::as_str) {
                Some("batch") => Err(invalid("a batch cannot contain a batch")),
                _ => self.handle(sub, client),
            };
            let failed = reply.is_err();
            answers.push(answer_json(None, reply));
            if failed && batch.stop_on_error {
                break;
            }
        }
        Ok(Value::Array(answers))
    }

    fn load_pipeline(&self, load: LoadPipeline) -> Reply {
        let ir = match (load.ir, load.ir_path) {
            (Some(ir), _) => ir,
            (None, Some(path)) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| invalid(format!("cannot read IR file {path}: {e}")))?;
                serde_json::from_str(&text)
                    .map_err(|e| invalid(format!("{path}: not JSON: {e}")))?
            }
            _ => {
                return Err(invalid(
                    "load_pipeline needs \"ir\" (object) or \"ir_path\"",
                ))
            }
        };
        let prog = program::load(&ir).map_err(|e| invalid(format!("IR rejected: {e}")))?;
        let name = prog.name.clone();
        let mut rt =
            Runtime::new(Arc::new(prog)).map_err(|e| invalid(format!("IR rejected: {e}")))?;
        rt.tag = load.tag;
        self.with_guard(|slot| *slot = Some(rt));
        self.shared.generation.fetch_add(1, Ordering::AcqRel);
        signal(self.shared.wake_dataplane);
        Ok(json!({"program": name}))
    }

    fn packet_out(&self, out: PacketOut) -> Reply {
        let payload = parse_hex_bytes(&out.payload, "payload")?;
        let bytes = match &out.metadata {
            None => payload,
            Some(meta) => {
                let mut bytes = self.with_guard(|slot| match slot.as_ref() {
                    Some(rt) => packet_out_header(&rt.prog, meta),
                    None => Err(no_pipeline()),
                })?;
                bytes.extend_from_slice(&payload);
                bytes
            }
        };
        let mut q = self
            .shared
            .packet_out
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if q.len() >= PACKET_OUT_QUEUE_LIMIT {
            return Err(Failure {
                code: "RESOURCE_EXHAUSTED",
                message: "packet-out queue full".into(),
            });
        }
        q.push_back(bytes);
        drop(q);
        signal(self.shared.wake_dataplane);
        Ok(Value::Null)
    }

    /// Whether each port is running as the selectors see it (watch ports): `null` until
    /// the port watch has handed its state to the loaded pipeline.
    fn port_status(&self) -> Value {
        let down = crate::liveness::applied_down_ports(self.shared);
        let ports: Vec<Value> = self
            .shared
            .ports
            .iter()
            .map(|(n, name)| {
                let running = down.as_ref().map(|d| !d.contains(n));
                json!({"port": n, "name": name, "running": running})
            })
            .collect();
        json!({ "ports": ports })
    }

    fn stats(&self) -> Value {
        let s = self.shared;
        let heap = s.heap_stats();
        // Before the ports' counts (see `begun` below): they include every ended round's.
        let ended = s.counters.rounds_ended.load(Ordering::Acquire);
        let ports: Vec<Value> = s
            .ports
            .iter()
            .zip(&s.port_counters)
            .map(|((n, name), c)| {
                json!({"port": n, "name": name, "rx_packets": get(&c.rx_packets), "rx_bytes": get(&c.rx_bytes),
                       "tx_packets": get(&c.tx_packets), "tx_bytes": get(&c.tx_bytes), "drops": get(&c.drops),
                       "drop_reasons": c.drop_reasons(), "xdp": c.xdp_stats()})
            })
            .collect();
        let c = &s.counters;
        // After the ports' counts: a round that counted a frame read there began before
        // `begun` is read, so it is over (and its sends counted) once `ended` reaches it.
        fence(Ordering::Acquire);
        let begun = get(&c.rounds_begun);
        json!({
            "ports": ports,
            "rx_ring": s.rx_ring.stats(),
            "cpu_port": s.cpu_port,
            "pipeline": {"packets": get(&c.pipeline_packets), "drops": get(&c.pipeline_drops),
                         "loop_drops": get(&c.loop_drops), "unknown_port_drops": get(&c.unknown_port_drops),
                         "no_pipeline_drops": get(&c.no_pipeline_drops), "rehearsals": get(&c.rehearsals),
                         "warmups": get(&c.warmups)},
            "cpu": {"packet_in": get(&c.packet_in), "packet_out": get(&c.packet_out),
                    "digests": get(&c.digests), "events_dropped": get(&c.events_dropped),
                    "events_unheard": get(&c.events_unheard)},
            "dataplane_busy_s": get(&c.busy_ns) as f64 / 1e9,
            "dataplane_cpu_s": get(&c.busy_cpu_ns) as f64 / 1e9,
            "dataplane_moves": get(&c.moves),
            "uptime_s": s.started.elapsed().as_secs_f64(),
            "heap": heap,
            "table_reads": {"whole": get(&c.whole_table_reads), "by_key": get(&c.key_reads)},
            "rounds": {"begun": begun, "ended": ended},
        })
    }
}

fn packet_out_header(prog: &Program, meta: &[PacketOutField]) -> Result<Vec<u8>, Failure> {
    let Some(h) = &prog.packet_out else {
        return Err(invalid(
            "the program has no @controller_header(\"packet_out\") header",
        ));
    };
    let mut values = vec![0u128; h.fields.len()];
    for m in meta {
        let pos = h
            .fields
            .iter()
            .position(|f| f.0 as u64 == m.id)
            .ok_or_else(|| not_found(format!("packet_out metadata id {}", m.id)))?;
        let Hex(v) = m.value;
        if v > mask(h.fields[pos].2) {
            return Err(invalid(format!(
                "packet_out metadata {} does not fit {} bits",
                h.fields[pos].1, h.fields[pos].2
            )));
        }
        values[pos] = v;
    }
    let mut out = Vec::new();
    let mut bits = 0;
    for (v, f) in values.iter().zip(&h.fields) {
        write_bits(&mut out, &mut bits, *v, f.2);
    }
    out.resize(prog.instances[h.inst].bits as usize / 8, 0);
    Ok(out)
}

fn action_call(
    rt: &Runtime,
    table: usize,
    spec: Option<&ActionSpec>,
    default: bool,
) -> Result<ActionCall, Failure> {
    let prog = &rt.prog;
    let wanted = spec
        .and_then(|s| s.action.as_ref())
        .ok_or_else(|| invalid("missing \"action\""))?;
    let named = resolve(&prog.actions, wanted, "action", |a| (a.id, &a.name))?;
    let def = &prog.tables[table];
    // One P4 action may be several IR actions (one per binding of its directional
    // parameters, all with its id): the table's own list says which binding it runs.
    let id = prog.actions[named].id;
    let listed = def.actions.iter().find(|(a, _)| prog.actions[*a].id == id);
    let action = listed.map_or(named, |(a, _)| *a);
    let name = &prog.actions[action].name;
    match (listed.map(|(_, s)| *s), default) {
        (None, _) => {
            return Err(invalid(format!(
                "action {name} is not an action of table {}",
                def.name
            )))
        }
        (Some(Scope::DefaultOnly), false) => {
            return Err(invalid(format!("action {name} is @defaultonly")))
        }
        (Some(Scope::TableOnly), true) => {
            return Err(invalid(format!("action {name} is @tableonly")))
        }
        _ => {}
    }
    let args = spec.map_or(&[][..], |s| &s.args);
    let params = &prog.actions[action].params;
    if args.len() != params.len() {
        return Err(invalid(format!(
            "action {name} takes {} arguments, got {}",
            params.len(),
            args.len()
        )));
    }
    let mut values = Vec::with_capacity(args.len());
    for (i, (Hex(v), (_, w))) in args.iter().zip(params).enumerate() {
        if *v > mask(*w) {
            return Err(invalid(format!(
                "{name} argument {i} ({v:#x}) does not fit {w} bits"
            )));
        }
        values.push(*v);
    }
    Ok(ActionCall {
        action,
        params: values,
    })
}

/// What an entry runs: `{"action", "args"}` for an action of its own, `{"member": id}` or
/// `{"group": id}` in a table with an action profile or selector.
fn entry_action(
    rt: &Runtime,
    table: usize,
    spec: Option<&ActionSpec>,
) -> Result<EntryAction, Failure> {
    let def = &rt.prog.tables[table];
    // Checked like the member/group commands' ids: 2^32 must not wrap to 0.
    let member = spec
        .and_then(|s| s.member)
        .map(|id| check_id(id, "member"))
        .transpose()?;
    let group = spec
        .and_then(|s| s.group)
        .map(|id| check_id(id, "group"))
        .transpose()?;
    let Some(p) = def.implementation else {
        if member.is_some() || group.is_some() {
            return Err(invalid(format!(
                "table {} has no action profile: its entries name an action",
                def.name
            )));
        }
        return Ok(EntryAction::Direct(action_call(rt, table, spec, false)?));
    };
    let profile = &rt.prog.profiles[p];
    let (found, what) = match (member, group) {
        (Some(id), None) => (
            rt.profiles[p].member(id).map(|_| EntryAction::Member(id)),
            format!("member {id}"),
        ),
        (None, Some(_)) if profile.selector.is_none() => {
            return Err(invalid(format!(
                "{} is an action profile without a selector: it has no groups",
                profile.name
            )))
        }
        (None, Some(id)) => (
            rt.profiles[p]
                .groups
                .contains_key(&id)
                .then_some(EntryAction::Group(id)),
            format!("group {id}"),
        ),
        _ => {
            return Err(invalid(format!(
                "table {} is implemented by {}: an entry names one member or one group",
                def.name, profile.name
            )))
        }
    };
    found.ok_or_else(|| not_found(format!("{}: no such {what}", profile.name)))
}

fn entry_action_json(rt: &Runtime, action: &EntryAction) -> Value {
    match action {
        EntryAction::Direct(call) => action_json(rt, call),
        EntryAction::Member(id) => json!({"member": id}),
        EntryAction::Group(id) => json!({"group": id}),
    }
}

fn profile_failure(e: ProfileError) -> Failure {
    let code = match e {
        ProfileError::Exists => "ALREADY_EXISTS",
        ProfileError::NotFound(_) => "NOT_FOUND",
        ProfileError::InUse(_) => "FAILED_PRECONDITION",
        ProfileError::Full(_) => "RESOURCE_EXHAUSTED",
        ProfileError::Invalid(_) => "INVALID_ARGUMENT",
    };
    Failure {
        code,
        message: e.to_string(),
    }
}

fn profile_index(rt: &Runtime, profile: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.profiles, profile, "profile", |p| (p.id, &p.name))
}

/// A member or group id (`key` names it): 1..2^32-1, chosen by the client.
fn check_id(id: u64, key: &str) -> Result<u32, Failure> {
    match u32::try_from(id) {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(invalid(format!("{key} must be an id in 1..2^32-1"))),
    }
}

/// Whether an entry of a table the profile implements runs `action` (a member or group).
fn entries_use(rt: &Runtime, profile: usize, action: &EntryAction) -> bool {
    rt.prog.profiles[profile]
        .tables
        .iter()
        .any(|t| rt.tables[*t].entries().any(|(_, e)| e.action == *action))
}

fn member_write(rt: &mut Runtime, req: &MemberWrite, cmd: &str) -> Reply {
    let p = profile_index(rt, &req.profile)?;
    let id = check_id(req.member, "member")?;
    if cmd == "profile_member_delete" {
        let used = entries_use(rt, p, &EntryAction::Member(id));
        rt.profiles[p]
            .delete_member(id, used)
            .map_err(profile_failure)?;
        return Ok(Value::Null);
    }
    // The tables a profile implements share one action list, each action bound alike (the
    // compiler checks it), so the first table resolves the action for all.
    let def = &rt.prog.profiles[p];
    let Some(&table) = def.tables.first() else {
        return Err(invalid(format!("{} implements no table", def.name)));
    };
    let call = action_call(rt, table, req.action.as_ref(), false)?;
    let size = def.size;
    let profile = &mut rt.profiles[p];
    if cmd == "profile_member_add" {
        profile.add_member(id, call, size)
    } else {
        profile.modify_member(id, call)
    }
    .map_err(profile_failure)?;
    Ok(Value::Null)
}

/// A group member item: `{"member", "weight", "watch_port"?}` (or the deprecated `watch`).
fn group_member(item: &GroupMemberSpec, ports: &[(u32, String)]) -> Result<GroupMember, Failure> {
    let weight = item.weight.min(u32::MAX as u64) as u32;
    let mut member = GroupMember::new(check_id(item.member, "member")?, weight);
    for (key, port, deprecated) in [
        ("watch_port", item.watch_port, false),
        ("watch", item.watch, true),
    ] {
        let Some(port) = port else { continue };
        if !ports.iter().any(|(n, _)| *n as u64 == port) {
            return Err(invalid(format!(
                "member {}: {key} {port} is not a port of this switch",
                member.member
            )));
        }
        member.watch = Some((port as u32, deprecated));
    }
    Ok(member)
}

fn group_write(rt: &mut Runtime, req: &GroupWrite, cmd: &str, ports: &[(u32, String)]) -> Reply {
    let p = profile_index(rt, &req.profile)?;
    let def = &rt.prog.profiles[p];
    if def.selector.is_none() {
        return Err(invalid(format!(
            "{} is an action profile without a selector: it has no groups",
            def.name
        )));
    }
    let id = check_id(req.group, "group")?;
    if cmd == "profile_group_delete" {
        let used = entries_use(rt, p, &EntryAction::Group(id));
        rt.profiles[p]
            .delete_group(id, used)
            .map_err(profile_failure)?;
        return Ok(Value::Null);
    }
    let max_size = req.max_size;
    // max_size 0: "the static max_group_size value will be used" (p4runtime.proto,
    // ActionProfileGroup.max_size), or the profile's size without one.
    if def.max_group_size > 0 && max_size > def.max_group_size as u64 {
        return Err(invalid(format!(
            "max_size {max_size} over {} (max_group_size)",
            def.max_group_size
        )));
    }
    if max_size > def.size as u64 {
        return Err(profile_failure(ProfileError::Full(format!(
            "max_size {max_size} exceeds what {} holds ({})",
            def.name, def.size
        ))));
    }
    let members = req
        .members
        .iter()
        .map(|m| group_member(m, ports))
        .collect::<Result<Vec<_>, _>>()?;
    let one_shot = req.one_shot;
    let insert = cmd == "profile_group_add";
    if let (false, Some(mark), Some(old)) = (insert, one_shot, rt.profiles[p].groups.get(&id)) {
        if old.one_shot != mark {
            return Err(invalid(format!("group {id}: one_shot cannot change")));
        }
    }
    let default_cap = match def.max_group_size {
        0 => def.size as u32,
        cap => cap as u32,
    };
    let limit = (default_cap, def.size as u32, def.size_by);
    let profile = &mut rt.profiles[p];
    profile
        .set_group(id, members, max_size as u32, insert, limit)
        .map_err(profile_failure)?;
    if insert {
        profile.groups.get_mut(&id).expect("just added").one_shot = one_shot == Some(true);
    }
    Ok(Value::Null)
}

/// Members (`{"profile", "member", "action"}`) or groups (`{"profile", "group",
/// "members": [{"member", "weight"}], "max_size", "one_shot"}`) of one profile, or of all.
fn profile_read(rt: &Runtime, req: &ProfileRead, cmd: &str) -> Reply {
    let wanted = match &req.profile {
        None => (0..rt.profiles.len()).collect(),
        Some(profile) => vec![profile_index(rt, profile)?],
    };
    let mut out = Vec::new();
    for p in wanted {
        let pid = rt.prog.profiles[p].id;
        if cmd == "profile_member_read" {
            for (id, call) in &rt.profiles[p].members {
                out.push(json!({"profile": pid, "member": id, "action": action_json(rt, call)}));
            }
            continue;
        }
        for (id, g) in &rt.profiles[p].groups {
            let members: Vec<Value> = g.members.iter().map(group_member_json).collect();
            out.push(json!({"profile": pid, "group": id, "members": members,
                            "max_size": g.max_size, "one_shot": g.one_shot}));
        }
    }
    let key = if cmd == "profile_member_read" {
        "members"
    } else {
        "groups"
    };
    Ok(json!({ key: out }))
}

fn group_member_json(m: &GroupMember) -> Value {
    let mut item = json!({"member": m.member, "weight": m.weight});
    if let Some((port, deprecated)) = m.watch {
        let key = if deprecated { "watch" } else { "watch_port" };
        item[key] = json!(port);
    }
    item
}

fn action_json(rt: &Runtime, call: &ActionCall) -> Value {
    let a = &rt.prog.actions[call.action];
    json!({"action": a.id, "name": a.name, "args": call.params.iter().map(|p| hex(*p)).collect::<Vec<_>>()})
}

/// A meter cell's config, or null when it is unconfigured.
fn meter_json(cell: &MeterCell) -> Value {
    match cell.config() {
        Some(c) => json!({"cir": c.cir, "cburst": c.cburst, "pir": c.pir, "pburst": c.pburst}),
        None => Value::Null,
    }
}

/// An entry's key as the table takes it; `priority` checked against the table's keys.
fn entry_key(
    rt: &Runtime,
    table: usize,
    items: &[MatchItem],
    priority: i32,
) -> Result<(Vec<FieldMatch>, i32), Failure> {
    let def = &rt.prog.tables[table];
    let needs_priority = def.keys.iter().any(|k| {
        matches!(
            k.kind,
            crate::tables::MatchKind::Ternary
                | crate::tables::MatchKind::Range
                | crate::tables::MatchKind::Optional
        )
    });
    if needs_priority && priority <= 0 {
        return Err(invalid(format!(
            "table {} has ternary/range/optional keys: entries need a priority > 0",
            def.name
        )));
    }
    if !needs_priority && priority != 0 {
        return Err(invalid(format!(
            "table {} takes no entry priorities",
            def.name
        )));
    }
    Ok((field_matches(items), priority))
}

fn table_index(rt: &Runtime, table: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.tables, table, "table", |t| (t.id, &t.name))
}

fn table_write(rt: &mut Runtime, req: &TableWrite, cmd: &str, now: u64) -> Reply {
    let t = table_index(rt, &req.table)?;
    let def = &rt.prog.tables[t];
    if def.is_const {
        return Err(invalid(format!(
            "table {} has const entries and cannot be changed",
            def.name
        )));
    }
    let (matches, priority) = entry_key(rt, t, &req.matches, req.priority)?;
    // Checked before the table changes: a refused request must leave no entry behind.
    if matches!(req.meter, Some(Some(_))) && def.direct_meter.is_none() {
        return Err(invalid("this table has no direct meter"));
    }
    let meta = optional_meta(req.meta.as_deref())?;
    let slot = if cmd == "table_add" {
        let call = entry_action(rt, t, req.action.as_ref())?;
        rt.tables[t]
            .insert(&matches, priority, call)
            .map_err(table_error)?
    } else {
        let slot = rt.tables[t].find(&matches, priority).map_err(table_error)?;
        if rt.tables[t].entry(slot).is_some_and(|e| e.is_const) {
            return Err(Failure {
                code: "PERMISSION_DENIED",
                message: format!("this entry of table {} is const", def.name),
            });
        }
        if cmd == "table_delete" {
            rt.tables[t]
                .delete(&matches, priority)
                .map_err(table_error)?;
            return Ok(Value::Null);
        }
        let call = entry_action(rt, t, req.action.as_ref())?;
        rt.tables[t]
            .modify(&matches, priority, call)
            .map_err(table_error)?;
        slot
    };
    if let Some(e) = rt.tables[t].entry_mut(slot) {
        if let Some(ns) = req.idle_timeout_ns {
            e.idle_timeout_ns = ns;
        }
        if cmd == "table_add" {
            e.last_hit_ns = now;
        }
        if let Some(config) = req.meter {
            e.direct.meter.configure(config, now);
        }
        if let Some(meta) = meta {
            e.meta = meta;
        }
    }
    Ok(Value::Null)
}

fn table_default(rt: &mut Runtime, req: &TableDefault, cmd: &str) -> Reply {
    let t = table_index(rt, &req.table)?;
    let def = &rt.prog.tables[t];
    if def.default_const {
        return Err(invalid(format!(
            "table {} has a const default action",
            def.name
        )));
    }
    let meta = optional_meta(req.meta.as_deref())?;
    let call = if cmd == "table_reset_default" {
        // The program's default entry, its direct meter unconfigured and its meta gone
        // (P4Runtime 9.1.3).
        rt.tables[t].default_direct.meter.configure(None, 0);
        rt.tables[t].default_meta = Box::default();
        ActionCall {
            action: def.default_action,
            params: def.default_args.clone(),
        }
    } else {
        action_call(rt, t, req.action.as_ref(), true)?
    };
    rt.tables[t].default_action = call;
    if let Some(meta) = meta {
        rt.tables[t].default_meta = meta;
    }
    Ok(Value::Null)
}

/// `table_read`: every entry, or with `match` (and `priority`) only the entry with that key
/// (none if there is none), so that reading one entry does not cost the whole table.
fn table_read(rt: &Runtime, req: &TableRead, now: u64, counters: &SwitchCounters) -> Reply {
    let t = table_index(rt, &req.table)?;
    let table = &rt.tables[t];
    let slots: Vec<usize> = match &req.matches {
        None => {
            add(&counters.whole_table_reads, 1);
            table.entries().map(|(slot, _)| slot).collect()
        }
        Some(items) => {
            add(&counters.key_reads, 1);
            match table.find(&field_matches(items), req.priority) {
                Ok(slot) => vec![slot],
                Err(TableError::NotFound) => Vec::new(),
                Err(e) => return Err(table_error(e)),
            }
        }
    };
    let entries: Vec<Value> = slots
        .into_iter()
        .filter_map(|slot| table.entry(slot))
        .map(|e| {
            json!({
                "match": e.matches.iter().map(match_json).collect::<Vec<_>>(),
                "priority": e.priority,
                "action": entry_action_json(rt, &e.action),
                "packets": e.direct.packets, "bytes": e.direct.bytes,
                "meter": meter_json(&e.direct.meter),
                "meter_counts": counts_json(&e.direct.meter.counts),
                "const": e.is_const,
                "idle_timeout_ns": e.idle_timeout_ns,
                "idle_ns": now.saturating_sub(e.last_hit_ns),
                "meta": hex_bytes(&e.meta),
            })
        })
        .collect();
    let default = &table.default_direct;
    Ok(json!({
        "table": rt.prog.tables[t].id, "name": rt.prog.tables[t].name,
        "entries": entries,
        "default_action": action_json(rt, &table.default_action),
        "default_packets": default.packets, "default_bytes": default.bytes,
        "default_meter": meter_json(&default.meter),
        "default_meter_counts": counts_json(&default.meter.counts),
        "default_meta": hex_bytes(&table.default_meta),
    }))
}

fn table_clear(rt: &mut Runtime, req: &TableClear) -> Reply {
    let t = table_index(rt, &req.table)?;
    if rt.prog.tables[t].is_const {
        return Err(invalid("table has const entries"));
    }
    rt.tables[t].clear();
    Ok(Value::Null)
}

/// The direct counter and meter of the entry a request names: by `match` and `priority`,
/// or the default entry with `"default": true`.
fn direct_resources<'a>(
    rt: &'a mut Runtime,
    t: usize,
    (items, priority, default): (&[MatchItem], i32, bool),
) -> Result<&'a mut Direct, Failure> {
    if default {
        return Ok(&mut rt.tables[t].default_direct);
    }
    let (matches, priority) = entry_key(rt, t, items, priority)?;
    let table = &mut rt.tables[t];
    let slot = table.find(&matches, priority).map_err(table_error)?;
    let e = table
        .entry_mut(slot)
        .ok_or_else(|| table_error(TableError::NotFound))?;
    Ok(&mut e.direct)
}

fn entry_counter_write(rt: &mut Runtime, req: &EntryCounterWrite) -> Reply {
    let t = table_index(rt, &req.table)?;
    let target = direct_resources(rt, t, (&req.matches, req.priority, req.default))?;
    target.packets = req.packets;
    target.bytes = req.bytes;
    Ok(Value::Null)
}

/// Sets one entry's direct meter (`meter`: a config, `null` unconfigures it, absent keeps
/// it) and/or its colour counts (`counts`), nothing else: allowed on const entries too,
/// whose direct resources stay writable (P4Runtime spec 9.1.4).
fn entry_meter_set(rt: &mut Runtime, req: &EntryMeterSet, now: u64) -> Reply {
    let t = table_index(rt, &req.table)?;
    if rt.prog.tables[t].direct_meter.is_none() {
        return Err(invalid("this table has no direct meter"));
    }
    let counts = req.counts.as_ref().map(ColourCounts::from);
    let target = direct_resources(rt, t, (&req.matches, req.priority, req.default))?;
    set_meter_cell(&mut target.meter, req.meter, counts, now);
    Ok(Value::Null)
}

fn set_meter_cell(
    cell: &mut MeterCell,
    config: Option<Option<MeterConfig>>,
    counts: Option<ColourCounts>,
    now: u64,
) {
    if let Some(config) = config {
        cell.configure(config, now);
    }
    if let Some(counts) = counts {
        cell.counts = counts;
    }
}

const COLOURS: [&str; 3] = ["green", "yellow", "red"];

fn counts_json(c: &ColourCounts) -> Value {
    let mut m = Map::new();
    for (i, colour) in COLOURS.iter().enumerate() {
        m.insert(
            colour.to_string(),
            json!({"packets": c.packets[i], "bytes": c.bytes[i]}),
        );
    }
    Value::Object(m)
}

/// The cells a request covers: the one at `index`, or every cell without it.
fn cell_range(
    index: Option<u64>,
    size: usize,
    name: &str,
) -> Result<std::ops::Range<usize>, Failure> {
    match index {
        None => Ok(0..size),
        Some(i) if i < size as u64 => Ok(i as usize..i as usize + 1),
        Some(i) => Err(invalid(format!("index {i} outside {name} (size {size})"))),
    }
}

fn counter_index(rt: &Runtime, counter: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.counters, counter, "counter", |c| (c.id, &c.name))
}

fn counter_write(rt: &mut Runtime, req: &CounterWrite) -> Reply {
    let c = counter_index(rt, &req.counter)?;
    let def = &rt.prog.counters[c];
    let range = cell_range(req.index, def.size, &def.name)?;
    for cell in &mut rt.counters[c][range] {
        *cell = (req.packets, req.bytes);
    }
    Ok(Value::Null)
}

fn counter_read(rt: &Runtime, req: &CounterRead) -> Reply {
    let c = counter_index(rt, &req.counter)?;
    let def = &rt.prog.counters[c];
    let range = cell_range(req.index, def.size, &def.name)?;
    let unit = def.unit;
    let cells: Vec<Value> = range
        .map(|i| {
            let (p, b) = rt.counters[c][i];
            let mut m = Map::new();
            m.insert("index".into(), json!(i));
            if unit != Unit::Bytes {
                m.insert("packets".into(), json!(p));
            }
            if unit != Unit::Packets {
                m.insert("bytes".into(), json!(b));
            }
            Value::Object(m)
        })
        .collect();
    Ok(json!({"cells": cells}))
}

fn meter_index(rt: &Runtime, meter: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.meters, meter, "meter", |m| (m.id, &m.name))
}

fn meter_set(rt: &mut Runtime, req: &MeterSet, now: u64) -> Reply {
    let m = meter_index(rt, &req.meter)?;
    let def = &rt.prog.meters[m];
    let range = cell_range(req.index, def.size, &def.name)?;
    let counts = req.counts.as_ref().map(ColourCounts::from);
    for cell in &mut rt.meters[m][range] {
        set_meter_cell(cell, req.config, counts, now);
    }
    Ok(Value::Null)
}

fn meter_read(rt: &Runtime, req: &MeterRead) -> Reply {
    let m = meter_index(rt, &req.meter)?;
    let def = &rt.prog.meters[m];
    let range = cell_range(req.index, def.size, &def.name)?;
    let cells: Vec<Value> = range
        .map(|i| {
            let cell = &rt.meters[m][i];
            json!({"index": i, "config": meter_json(cell), "counts": counts_json(&cell.counts)})
        })
        .collect();
    Ok(json!({"cells": cells}))
}

fn register_index(rt: &Runtime, register: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.registers, register, "register", |r| {
        (r.id, &r.name)
    })
}

fn register_write(rt: &mut Runtime, req: &RegisterWrite) -> Reply {
    let r = register_index(rt, &req.register)?;
    let def = &rt.prog.registers[r];
    let range = cell_range(req.index, def.size, &def.name)?;
    let v = req.value.value();
    if v > mask(def.width) {
        return Err(invalid(format!(
            "value {v:#x} does not fit the {}-bit register",
            def.width
        )));
    }
    for cell in &mut rt.registers[r][range] {
        *cell = v;
    }
    Ok(Value::Null)
}

fn register_read(rt: &Runtime, req: &RegisterRead) -> Reply {
    let r = register_index(rt, &req.register)?;
    let def = &rt.prog.registers[r];
    let range = cell_range(req.index, def.size, &def.name)?;
    let cells: Vec<Value> = range
        .map(|i| json!({"index": i, "value": hex(rt.registers[r][i])}))
        .collect();
    Ok(json!({"cells": cells}))
}

fn replicas(list: &[ReplicaSpec]) -> Result<Vec<Replica>, Failure> {
    list.iter()
        .map(|r| {
            if r.port > 511 {
                return Err(invalid(format!(
                    "replica port {} is not a 9-bit port",
                    r.port
                )));
            }
            Ok(Replica {
                port: r.port as u32,
                rid: r.rid,
            })
        })
        .collect()
}

fn replicas_json(list: &[Replica]) -> Value {
    list.iter()
        .map(|r| json!({"port": r.port, "rid": r.rid}))
        .collect()
}

const BAD_GROUP: &str = "\"group\" must be a number in 1..65535";

fn mcast_group_set(rt: &mut Runtime, req: &McastGroupSet) -> Reply {
    if !(1..=0xffff).contains(&req.group) {
        return Err(invalid(BAD_GROUP));
    }
    rt.pre
        .groups
        .insert(req.group as u32, replicas(&req.replicas)?);
    Ok(Value::Null)
}

fn mcast_group_delete(rt: &mut Runtime, group: Option<u64>) -> Reply {
    let g = group.ok_or_else(|| invalid(BAD_GROUP))?;
    match rt.pre.groups.remove(&(g as u32)) {
        Some(_) => Ok(Value::Null),
        None => Err(not_found(format!("multicast group {g}"))),
    }
}

fn mcast_group_read(rt: &Runtime, group: Option<u64>) -> Reply {
    let groups: Vec<Value> = rt
        .pre
        .groups
        .iter()
        .filter(|(id, _)| group.is_none_or(|g| g as u32 == **id))
        .map(|(id, r)| json!({"group": id, "replicas": replicas_json(r)}))
        .collect();
    Ok(json!({ "groups": groups }))
}

const BAD_SESSION: &str = "\"session\" must be a number > 0";

fn clone_session_set(rt: &mut Runtime, req: &CloneSessionSet) -> Reply {
    if req.session == 0 {
        return Err(invalid(BAD_SESSION));
    }
    let cs = CloneSession {
        replicas: replicas(&req.replicas)?,
        class_of_service: req.class_of_service,
        packet_length_bytes: req.packet_length_bytes,
    };
    rt.pre.clone_sessions.insert(req.session as u32, cs);
    Ok(Value::Null)
}

fn clone_session_delete(rt: &mut Runtime, session: Option<u64>) -> Reply {
    let s = session.ok_or_else(|| invalid(BAD_SESSION))?;
    match rt.pre.clone_sessions.remove(&(s as u32)) {
        Some(_) => Ok(Value::Null),
        None => Err(not_found(format!("clone session {s}"))),
    }
}

fn clone_session_read(rt: &Runtime, session: Option<u64>) -> Reply {
    let sessions: Vec<Value> = rt
        .pre
        .clone_sessions
        .iter()
        .filter(|(id, _)| session.is_none_or(|s| s as u32 == **id))
        .map(|(id, c)| {
            json!({"session": id, "replicas": replicas_json(&c.replicas),
                   "class_of_service": c.class_of_service, "packet_length_bytes": c.packet_length_bytes})
        })
        .collect();
    Ok(json!({ "sessions": sessions }))
}

fn value_set_index(rt: &Runtime, value_set: &ObjectRef) -> Result<usize, Failure> {
    resolve(&rt.prog.value_sets, value_set, "value_set", |d| {
        (d.id, &d.name)
    })
}

/// Replaces a parser value set's members (all of them; `[]` empties the set).
fn value_set_write(rt: &mut Runtime, req: &ValueSetWrite) -> Reply {
    let prog = rt.prog.clone();
    let vs = value_set_index(rt, &req.value_set)?;
    let members = req.members.iter().map(|m| field_matches(m)).collect();
    rt.value_sets[vs]
        .replace(&prog.value_sets[vs], members)
        .map_err(|e| Failure {
            code: e.code(),
            message: format!("value set {}: {e}", prog.value_sets[vs].name),
        })?;
    Ok(Value::Null)
}

/// One value set's members (`value_set` given) or every set's.
fn value_set_read(rt: &Runtime, req: &ValueSetRead) -> Reply {
    let prog = &rt.prog;
    let chosen = match &req.value_set {
        None => (0..prog.value_sets.len()).collect(),
        Some(value_set) => vec![value_set_index(rt, value_set)?],
    };
    let sets: Vec<Value> = chosen
        .into_iter()
        .map(|i| {
            let members: Vec<Value> = rt.value_sets[i]
                .members()
                .iter()
                .map(|m| Value::Array(m.iter().map(match_json).collect()))
                .collect();
            let def = &prog.value_sets[i];
            json!({"value_set": def.id, "name": def.name, "members": members})
        })
        .collect();
    Ok(json!({ "value_sets": sets }))
}

// ---- events ----

fn event_json(prog: &Program, ev: &Event) -> Value {
    match ev {
        Event::PacketIn(bytes) => {
            let (metadata, header_len) = match &prog.packet_in {
                Some(h) if bytes.len() >= prog.instances[h.inst].bits as usize / 8 => {
                    let mut off = 0usize;
                    let meta: Vec<Value> = h
                        .fields
                        .iter()
                        .map(|(id, name, w)| {
                            let v = read_bits(bytes, off, *w).unwrap_or(0);
                            off += *w as usize;
                            json!({"id": id, "name": name, "value": hex(v)})
                        })
                        .collect();
                    (meta, prog.instances[h.inst].bits as usize / 8)
                }
                _ => (Vec::new(), 0),
            };
            json!({"event": "packet_in", "metadata": metadata, "payload": hex_bytes(&bytes[header_len..])})
        }
        Event::Digest { digest, values } => {
            let d = &prog.digests[*digest];
            json!({"event": "digest", "digest": d.id, "name": d.name,
                   "data": values.iter().map(|v| hex(*v)).collect::<Vec<_>>()})
        }
    }
}

fn subscribers(shared: &Shared) -> Vec<Arc<Client>> {
    shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|c| c.subscribed.load(Ordering::Relaxed))
        .cloned()
        .collect()
}

fn broadcast(clients: &[Arc<Client>], line: &str) {
    for c in clients {
        let mut w = c.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.write_all(line.as_bytes());
    }
}

/// Writes queued data-plane events to subscribed clients and reports idle entries.
pub fn event_writer(shared: Arc<Shared>) {
    let mut last_idle_scan = 0u64;
    loop {
        pktio::phy::port::wait_readable(&[shared.wake_events], 100);
        crate::shared::drain(shared.wake_events);
        let batch: Vec<_> = shared
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        // Encoded only for someone: a switch nobody listens to (no controller yet, a
        // plain forwarding run) spends nothing per packet-in or digest on JSON.
        let clients = subscribers(&shared);
        for (prog, ev) in &batch {
            if let Event::Digest { .. } = ev {
                add(&shared.counters.digests, 1);
            }
            if clients.is_empty() {
                add(&shared.counters.events_unheard, 1);
                continue;
            }
            let mut line = event_json(prog, ev).to_string();
            line.push('\n');
            broadcast(&clients, &line);
        }
        let now = shared.now_ns();
        if now - last_idle_scan > 200_000_000 {
            last_idle_scan = now;
            for line in idle_events(&shared, now) {
                broadcast(&clients, &line);
            }
        }
    }
}

fn idle_events(shared: &Shared, now: u64) -> Vec<String> {
    let mut guard = shared.lock_runtime();
    let Some(rt) = guard.as_mut() else {
        return Vec::new();
    };
    let prog = rt.prog.clone();
    let mut lines = Vec::new();
    for (t, def) in prog.tables.iter().enumerate() {
        if !def.support_timeout {
            continue;
        }
        let mut expired = Vec::new();
        let slots: Vec<usize> = rt.tables[t].entries().map(|(s, _)| s).collect();
        for slot in slots {
            let Some(e) = rt.tables[t].entry_mut(slot) else {
                continue;
            };
            let idle = now.saturating_sub(e.last_hit_ns);
            if e.idle_timeout_ns > 0 && idle >= e.idle_timeout_ns {
                // Report once per idle period: pretend a hit now so it is reported again
                // only after another full timeout.
                e.last_hit_ns = now;
                expired.push(
                    json!({"match": e.matches.iter().map(match_json).collect::<Vec<_>>(),
                                    "priority": e.priority, "idle_timeout_ns": e.idle_timeout_ns,
                                    "meta": hex_bytes(&e.meta)}),
                );
            }
        }
        if !expired.is_empty() {
            lines.push(format!("{}\n", json!({"event": "idle_timeout", "table": def.id, "name": def.name, "entries": expired})));
        }
    }
    lines
}

// ---- connections ----

/// A reply as sent: `{"id", "ok": true, "result"}` or `{"id", "ok": false, "code", "error"}`
/// (no `id` for the answers inside a `batch` reply).
fn answer_json(id: Option<Value>, reply: Reply) -> Value {
    let mut answer = match reply {
        Ok(result) => json!({"ok": true, "result": result}),
        Err(f) => json!({"ok": false, "code": f.code, "error": f.message}),
    };
    if let (Some(id), Some(fields)) = (id, answer.as_object_mut()) {
        fields.insert("id".into(), id);
    }
    answer
}

fn serve_client(shared: Arc<Shared>, stream: UnixStream, client: Arc<Client>) {
    let handler = Handler {
        shared: &shared,
        held: RefCell::new(None),
        hold_expired: Cell::new(false),
    };
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    loop {
        // While it holds the runtime, the client must send its next request in time.
        let limit = handler.holding().then_some(HOLD_LIMIT);
        let _ = reader.get_ref().set_read_timeout(limit);
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            // A timeout keeps what was read of the line in `buf`.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                handler.expire_hold();
                continue;
            }
            Err(_) => break,
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        buf.clear();
        if line.trim().is_empty() {
            continue;
        }
        let (id, reply) = match serde_json::from_str::<Value>(&line) {
            Ok(req) => (
                req.get("id").cloned().unwrap_or(Value::Null),
                handler.handle(&req, &client),
            ),
            Err(e) => (
                Value::Null,
                Err(invalid(format!("request is not JSON: {e}"))),
            ),
        };
        let answer = answer_json(Some(id), reply);
        let mut w = client.writer.lock().unwrap_or_else(|e| e.into_inner());
        if w.write_all(format!("{answer}\n").as_bytes()).is_err() {
            break;
        }
    }
    shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|c| c.id != client.id);
}

pub fn serve(shared: Arc<Shared>, listener: UnixListener, stop: Arc<AtomicBool>) {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let watched = shared.clone();
    std::thread::spawn(move || crate::liveness::watch(watched));
    for stream in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let Ok(writer) = stream.try_clone() else {
            continue;
        };
        // A client that stops reading must not stall event delivery to the others.
        let _ = writer.set_write_timeout(Some(std::time::Duration::from_secs(1)));
        let client = Arc::new(Client {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            writer: Mutex::new(writer),
            subscribed: AtomicBool::new(false),
        });
        shared
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(client.clone());
        let shared = shared.clone();
        std::thread::spawn(move || serve_client(shared, stream, client));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(req: Value) -> Result<Request, String> {
        Request::deserialize(&req).map_err(|e| e.to_string())
    }

    /// The error message a request gets, as `handle` words it (`cmd: field: what`).
    fn refusal(req: Value) -> String {
        let cmd = req["cmd"].as_str().unwrap_or_default().to_owned();
        match decode(req) {
            Ok(_) => panic!("{cmd}: decoded"),
            Err(e) => format!("{cmd}: {e}"),
        }
    }

    #[test]
    fn requests_decode_by_cmd_and_ignore_their_id() {
        assert!(matches!(
            decode(json!({"id": 7, "cmd": "ping"})),
            Ok(Request::Ping)
        ));
        assert!(matches!(
            decode(json!({"cmd": "no_such_thing"})),
            Ok(Request::Unknown)
        ));
        let req = json!({"id": 3, "cmd": "batch", "requests": [{"cmd": "ping"}]});
        let Ok(Request::Batch(Typed(b))) = decode(req) else {
            panic!("batch not decoded")
        };
        assert_eq!((b.requests.len(), b.stop_on_error), (1, false));
        let req = json!({"id": "x", "cmd": "table_add", "table": "MyIngress.t",
                         "match": [{"kind": "lpm", "v": "0x0a000000", "plen": 8}],
                         "action": {"action": 5, "args": ["0x1"]}, "meter": null});
        let Ok(Request::TableAdd(Typed(w))) = decode(req) else {
            panic!("table_add not decoded")
        };
        assert!(matches!(w.table, ObjectRef::Name(ref n) if n == "MyIngress.t"));
        assert!(matches!(
            field_matches(&w.matches)[..],
            [FieldMatch::Lpm(0x0a00_0000, 8)]
        ));
        assert!(matches!(w.meter, Some(None)), "null unconfigures the meter");
        let args = &w.action.expect("an action").args;
        assert!(matches!(args[..], [Hex(1)]));
    }

    #[test]
    fn a_bad_field_is_named() {
        let e = refusal(json!({"cmd": "batch", "requests": 3}));
        assert!(e.starts_with("batch: requests: invalid type"), "{e}");
        let e = refusal(json!({"cmd": "batch", "requests": [], "stop_on_error": "yes"}));
        assert!(e.starts_with("batch: stop_on_error: invalid type"), "{e}");
        let e = refusal(json!({"cmd": "packet_out"}));
        assert!(e.contains("missing field `payload`"), "{e}");
    }

    #[test]
    fn a_bad_match_value_names_the_item_and_key() {
        let e = refusal(json!({"cmd": "table_delete", "table": 1,
                               "match": [{"kind": "exact", "v": "0x1"},
                                         {"kind": "exact", "v": "10"}]}));
        assert!(e.starts_with("table_delete: match[1]"), "{e}");
        assert!(e.contains("lacks the 0x prefix"), "{e}");
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        // A misspelt optional field must not be silently ignored.
        let e = refusal(json!({"cmd": "counter_write", "counter": "c", "pakets": 3}));
        assert!(e.starts_with("counter_write: pakets: unknown field"), "{e}");
        let e = refusal(json!({"cmd": "register_write", "register": 1, "value": true}));
        assert!(e.starts_with("register_write: value: "), "{e}");
    }

    #[test]
    fn ir_const_entry_matches_are_read_with_the_same_items() {
        let items = [
            json!({"kind": "ternary", "v": "0x1", "m": "0xff"}),
            json!({"kind": "any"}),
        ];
        let got = parse_matches(&items, "t: const entry 0").expect("valid");
        assert!(matches!(
            got[..],
            [FieldMatch::Ternary(1, 0xff), FieldMatch::Any]
        ));
        let e = parse_matches(&[json!({"kind": "lpm", "v": "0x1"})], "t: const entry 0")
            .expect_err("plen missing");
        assert!(e.starts_with("t: const entry 0: match[0]"), "{e}");
        assert!(e.contains("plen"), "{e}");
    }
}
