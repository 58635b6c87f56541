//! The fields of each control request (switch/PROTOCOL.md) as typed structs, decoded with
//! serde's derive. A field the protocol does not name is refused (`deny_unknown_fields`),
//! so a misspelt optional field is an error, not silently ignored.

use std::fmt;

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use crate::meters::{ColourCounts, MeterConfig};
use crate::program::hex_value;
use crate::tables::FieldMatch;

/// A bit string: a hex string with `0x` (docs/p4-ir.md), at most 128 bits.
#[derive(Clone, Copy)]
pub struct Hex(pub u128);

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        hex_value(&text).map(Hex).map_err(D::Error::custom)
    }
}

/// A register value: a hex bit string or, for convenience, a JSON number.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a hex string like \"0x1f\" or a number")]
pub enum CountOrHex {
    Count(u64),
    Hex(Hex),
}

impl CountOrHex {
    pub fn value(&self) -> u128 {
        match *self {
            CountOrHex::Count(n) => n as u128,
            CountOrHex::Hex(Hex(v)) => v,
        }
    }
}

/// An object of the loaded program named by its P4Info id or its fully qualified name.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a P4Info id (number) or a name (string)")]
pub enum ObjectRef {
    Id(u64),
    Name(String),
}

impl fmt::Display for ObjectRef {
    /// As the request wrote it (a name in quotes), for error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectRef::Id(n) => write!(f, "{n}"),
            ObjectRef::Name(s) => write!(f, "{s:?}"),
        }
    }
}

/// One item of an entry's (or value-set member's) match, one per key in key order.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MatchItem {
    #[serde(alias = "optional")]
    Exact {
        v: Hex,
    },
    Lpm {
        v: Hex,
        plen: u64,
    },
    Ternary {
        v: Hex,
        m: Hex,
    },
    Range {
        lo: Hex,
        hi: Hex,
    },
    Any,
}

impl From<&MatchItem> for FieldMatch {
    fn from(item: &MatchItem) -> Self {
        match *item {
            MatchItem::Exact { v } => FieldMatch::Exact(v.0),
            MatchItem::Lpm { v, plen } => FieldMatch::Lpm(v.0, plen.min(128) as u32),
            MatchItem::Ternary { v, m } => FieldMatch::Ternary(v.0, m.0),
            MatchItem::Range { lo, hi } => FieldMatch::Range(lo.0, hi.0),
            MatchItem::Any => FieldMatch::Any,
        }
    }
}

pub fn field_matches(items: &[MatchItem]) -> Vec<FieldMatch> {
    items.iter().map(FieldMatch::from).collect()
}

/// What an entry (or a profile member) runs: `{"action", "args"}`, or in a table with an
/// action profile `{"member"}` / `{"group"}`. Ids are checked where they are used (1..2^32-1).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    pub action: Option<ObjectRef>,
    #[serde(default)]
    pub args: Vec<Hex>,
    pub member: Option<u64>,
    pub group: Option<u64>,
}

/// A field that may be absent (outer `None`: leave it), `null` (`Some(None)`: clear it) or a
/// value; used with `#[serde(default)]`, which gives the absent case.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// One colour's counts; a count left out is 0.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields, default)]
pub struct CountsOf {
    pub packets: u64,
    pub bytes: u64,
}

/// `{"green": {"packets", "bytes"}, "yellow": .., "red": ..}`; a colour left out is 0.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Counts {
    pub green: CountsOf,
    pub yellow: CountsOf,
    pub red: CountsOf,
}

impl From<&Counts> for ColourCounts {
    fn from(c: &Counts) -> Self {
        let colours = [c.green, c.yellow, c.red];
        ColourCounts {
            packets: colours.map(|c| c.packets),
            bytes: colours.map(|c| c.bytes),
        }
    }
}

/// `table_add`, `table_modify`, `table_delete`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableWrite {
    pub table: ObjectRef,
    #[serde(rename = "match", default)]
    pub matches: Vec<MatchItem>,
    #[serde(default)]
    pub priority: i32,
    pub action: Option<ActionSpec>,
    pub idle_timeout_ns: Option<u64>,
    #[serde(default, deserialize_with = "nullable")]
    pub meter: Option<Option<MeterConfig>>,
    pub meta: Option<String>,
}

/// `table_set_default`, `table_reset_default`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableDefault {
    pub table: ObjectRef,
    pub action: Option<ActionSpec>,
    pub meta: Option<String>,
}

/// `table_read`: the whole table, or with `match` the entry with that key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRead {
    pub table: ObjectRef,
    #[serde(rename = "match")]
    pub matches: Option<Vec<MatchItem>>,
    #[serde(default)]
    pub priority: i32,
}

/// `table_clear`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableClear {
    pub table: ObjectRef,
}

/// `table_entry_counter_write`: the entry by `match` and `priority`, or the default entry
/// with `"default": true`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryCounterWrite {
    pub table: ObjectRef,
    #[serde(rename = "match", default)]
    pub matches: Vec<MatchItem>,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub default: bool,
    #[serde(default)]
    pub packets: u64,
    #[serde(default)]
    pub bytes: u64,
}

/// `table_entry_meter_set`: the entry as in `table_entry_counter_write`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryMeterSet {
    pub table: ObjectRef,
    #[serde(rename = "match", default)]
    pub matches: Vec<MatchItem>,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub default: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub meter: Option<Option<MeterConfig>>,
    pub counts: Option<Counts>,
}

/// `profile_member_add`, `_modify`, `_delete` (which takes no `action`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberWrite {
    pub profile: ObjectRef,
    pub member: u64,
    pub action: Option<ActionSpec>,
}

/// A group's member: `{"member", "weight", "watch_port"?}` (or the deprecated `watch`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMemberSpec {
    pub member: u64,
    #[serde(default = "one")]
    pub weight: u64,
    pub watch_port: Option<u64>,
    pub watch: Option<u64>,
}

fn one() -> u64 {
    1
}

/// `profile_group_add`, `_modify`, `_delete` (which takes only `profile` and `group`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupWrite {
    pub profile: ObjectRef,
    pub group: u64,
    #[serde(default)]
    pub members: Vec<GroupMemberSpec>,
    #[serde(default)]
    pub max_size: u64,
    pub one_shot: Option<bool>,
}

/// `profile_member_read`, `profile_group_read`: one profile's, or every profile's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRead {
    pub profile: Option<ObjectRef>,
}

/// `counter_read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterRead {
    pub counter: ObjectRef,
    pub index: Option<u64>,
}

/// `counter_write`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterWrite {
    pub counter: ObjectRef,
    pub index: Option<u64>,
    #[serde(default)]
    pub packets: u64,
    #[serde(default)]
    pub bytes: u64,
}

/// `meter_read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterRead {
    pub meter: ObjectRef,
    pub index: Option<u64>,
}

/// `meter_set`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterSet {
    pub meter: ObjectRef,
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "nullable")]
    pub config: Option<Option<MeterConfig>>,
    pub counts: Option<Counts>,
}

/// `register_read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRead {
    pub register: ObjectRef,
    pub index: Option<u64>,
}

/// `register_write`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterWrite {
    pub register: ObjectRef,
    pub index: Option<u64>,
    pub value: CountOrHex,
}

/// One copy a multicast group or clone session makes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSpec {
    pub port: u64,
    #[serde(default)]
    pub rid: u32,
}

/// `mcast_group_set`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McastGroupSet {
    pub group: u64,
    pub replicas: Vec<ReplicaSpec>,
}

/// `mcast_group_delete`, and `mcast_group_read` (`group` optional there).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McastGroupKey {
    pub group: Option<u64>,
}

/// `clone_session_set`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloneSessionSet {
    pub session: u64,
    pub replicas: Vec<ReplicaSpec>,
    #[serde(default)]
    pub class_of_service: u32,
    #[serde(default)]
    pub packet_length_bytes: u32,
}

/// `clone_session_delete`, and `clone_session_read` (`session` optional there).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloneSessionKey {
    pub session: Option<u64>,
}

/// `value_set_write`: all the set's members, each a list of match items.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSetWrite {
    pub value_set: ObjectRef,
    pub members: Vec<Vec<MatchItem>>,
}

/// `value_set_read`: one set's members, or every set's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSetRead {
    pub value_set: Option<ObjectRef>,
}

/// `batch`: requests without `id`, each run as if sent on its own. They stay JSON here:
/// each is a whole request, decoded by its own `cmd` when it runs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    pub requests: Vec<Value>,
    #[serde(default)]
    pub stop_on_error: bool,
}

/// `load_pipeline`: the IR itself or a file the switch reads it from. The IR stays JSON
/// here: it is the IR loader's input (program.rs), checked there.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadPipeline {
    pub ir: Option<Value>,
    pub ir_path: Option<String>,
    pub tag: Option<String>,
}

/// One field of the program's packet-out header, by P4Info metadata id.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketOutField {
    pub id: u64,
    pub value: Hex,
}

/// `packet_out`: a payload (hex) and, for a program with a packet-out header, its fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketOut {
    pub payload: String,
    pub metadata: Option<Vec<PacketOutField>>,
}
