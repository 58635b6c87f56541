//! The loaded pipeline: the IR of docs/p4-ir.md turned into flat vectors and small enums
//! the interpreter walks. Loading checks every reference, so execution never indexes out
//! of bounds on a bad IR; every error names where in the IR it is.

use std::collections::HashMap;

use serde_json::Value;

use crate::hashes::HashAlgorithm;
use crate::profiles::SizeBy;
use crate::tables::MatchKind;
use crate::value_sets::ValueSetDef;
use crate::values::{Piece, SumPlan, WordPlan};

pub type LoadResult<T> = Result<T, String>;

/// Most action-data parameters an action may have (the data path keeps them in an array).
pub const MAX_PARAMS: usize = 32;

#[derive(Debug)]
pub struct Instance {
    pub name: String,
    pub is_header: bool,
    pub bits: u32,
    /// First slot of this instance's fields in the packet's flat field array.
    pub base: usize,
    /// (width, bit offset) per field.
    pub fields: Vec<(u32, u32)>,
    /// Headers: where each field's bits lie in the header's bytes, for extract: one piece
    /// per field in field order (`Piece::NONE` for a field wider than one piece, nearly
    /// never), so extract walks them beside the header's slots without a check per field;
    /// then the pieces of the wider fields.
    pub wire_narrow: Vec<Piece>,
    pub wire: Vec<WireBits>,
    /// Headers: how emit writes the fields (they tile the header) as bytes.
    pub emit: WordPlan,
}

/// One piece of a header field: the field's slot and where its bits are in the header.
#[derive(Clone, Copy, Debug)]
pub struct WireBits {
    pub slot: usize,
    pub piece: Piece,
    /// The field's most significant piece (reading it starts the field's value afresh).
    pub first: bool,
}

/// Expressions bit-concatenated MSB-first into a byte string zero-padded to whole bytes
/// (hash and checksum data), with each item's place in that string worked out at load.
#[derive(Clone, Debug)]
pub struct Packed {
    pub items: Vec<Expr>,
    /// Writes the items' values as bytes: by field slot when `of_fields`, else by item index.
    pub plan: WordPlan,
    /// The same layout for csum16, summed without its words (see `SumPlan`).
    pub sum: SumPlan,
    /// Every item is a plain field (checksums over header fields, the common case): the
    /// plan reads the fields directly, no expression is evaluated.
    pub of_fields: bool,
}

impl Packed {
    fn new(items: Vec<(Expr, u32)>) -> Packed {
        let slots: Option<Vec<(usize, u32)>> = items
            .iter()
            .map(|(e, w)| match e {
                Expr::Field(slot) => Some((*slot, *w)),
                _ => None,
            })
            .collect();
        let layout: Vec<(usize, u32)> = match &slots {
            Some(slots) => slots.clone(),
            None => items
                .iter()
                .enumerate()
                .map(|(i, (_, w))| (i, *w))
                .collect(),
        };
        Packed {
            plan: WordPlan::new(layout.iter().copied()),
            sum: SumPlan::new(layout),
            of_fields: slots.is_some(),
            items: items.into_iter().map(|(e, _)| e).collect(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    LNot,
    Neg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    AddSat,
    SubSat,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LAnd,
    LOr,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Const(u128),
    Field(usize),
    Valid(usize),
    Param(usize),
    Lookahead(u32),
    Un(UnOp, Box<Expr>, u32),
    Bin(BinOp, Box<Expr>, Box<Expr>, u32),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Slice(Box<Expr>, u32, u32),
    Concat(Box<Expr>, Box<Expr>, u32),
    Cast(Box<Expr>, u32),
}

/// A destination: a field slot, optionally a bit slice [hi:lo] of it.
#[derive(Clone, Copy, Debug)]
pub struct Dest {
    pub slot: usize,
    /// The bits written, in place: the field's width, or the slice's bits shifted to `lo`.
    pub mask: u128,
    /// The slice's low bit (0 for a whole field).
    pub lo: u32,
    pub is_slice: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySet {
    Exact(u128),
    Mask(u128, u128),
    Range(u128, u128),
    Any,
    /// A parser value set (index into `Program::value_sets`): the whole case's keyset.
    ValueSet(usize),
}

#[derive(Debug)]
pub enum Transition {
    Goto(i64),
    Select {
        keys: Vec<Expr>,
        cases: Vec<(Vec<KeySet>, i64)>,
    },
}

#[derive(Debug)]
pub struct ParserState {
    pub body: Vec<Stmt>,
    pub transition: Transition,
}

#[derive(Clone, Debug)]
pub struct SwitchCases {
    pub cases: Vec<(Vec<usize>, Vec<Stmt>)>,
    pub default: Option<Vec<Stmt>>,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Assign(Dest, Expr),
    CopyHeader(usize, usize),
    SetValid(usize, bool),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    Apply {
        table: usize,
        hit_dest: Option<Dest>,
        switch: Option<SwitchCases>,
    },
    Call(usize, Vec<Expr>),
    Exit,
    Return,
    StackPush(usize, usize),
    StackPop(usize, usize),
    CounterCount(usize, Expr),
    MeterExecute(usize, Expr, Dest),
    DirectMeterRead(Dest),
    RegisterRead(usize, Expr, Dest),
    RegisterWrite(usize, Expr, Expr),
    Hash {
        dst: Dest,
        algo: Algo,
        base: Expr,
        data: Packed,
        max: Expr,
    },
    Random(Dest, Expr, Expr),
    Clone {
        egress: bool,
        session: Expr,
        field_list: Option<u32>,
    },
    Resubmit(Option<u32>),
    Recirculate(Option<u32>),
    Digest(usize, Vec<(Expr, u32)>),
    VerifyChecksum {
        cond: Expr,
        data: Packed,
        checksum: Expr,
        algo: Algo,
    },
    UpdateChecksum {
        cond: Expr,
        data: Packed,
        dst: Dest,
        algo: Algo,
    },
    Log,
    Extract(usize),
    ExtractStack(usize),
    Advance(Expr),
    Verify(Expr, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    Standard(HashAlgorithm),
    Xor16,
}

#[derive(Debug)]
pub struct Action {
    pub id: u32,
    pub name: String,
    /// (P4Info param id, width) per action-data parameter.
    pub params: Vec<(u32, u32)>,
    pub body: Vec<Stmt>,
}

#[derive(Debug)]
pub struct KeyDef {
    pub kind: MatchKind,
    pub width: u32,
    pub expr: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

#[derive(Clone, Debug)]
pub struct ConstEntry {
    pub priority: i32,
    pub matches: Vec<Value>,
    pub action: usize,
    pub args: Vec<u128>,
    /// Marked `const` in a table's `entries` (every entry of `const entries` is const too).
    pub is_const: bool,
}

#[derive(Debug)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub size: usize,
    pub keys: Vec<KeyDef>,
    pub actions: Vec<(usize, Scope)>,
    pub default_action: usize,
    pub default_args: Vec<u128>,
    pub default_const: bool,
    pub const_entries: Vec<ConstEntry>,
    pub is_const: bool,
    pub direct_meter: Option<usize>,
    pub support_timeout: bool,
    /// The action profile or selector (index into `Program::profiles`) whose members and
    /// groups the entries name instead of an action.
    pub implementation: Option<usize>,
    /// The `selector` keys: hashed to pick a group's member.
    pub selector_keys: Packed,
}

/// An `action_profile` (no selector) or `action_selector` instance.
#[derive(Debug)]
pub struct ProfileDef {
    pub id: u32,
    pub name: String,
    /// Most members it holds (the constructor's `size`).
    pub size: usize,
    /// P4Info `max_group_size`: 0 = no static limit.
    pub max_group_size: usize,
    /// Hash algorithm and output width of a selector.
    pub selector: Option<(Algo, u32)>,
    /// How a selector's groups are sized (IR `selector.size_semantics`).
    pub size_by: SizeBy,
    /// The tables it implements (they share one action list).
    pub tables: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Packets,
    Bytes,
    Both,
}

#[derive(Debug)]
pub struct ExternDef {
    pub id: u32,
    pub name: String,
    pub size: usize,
    pub unit: Unit,
    /// Register width.
    pub width: u32,
}

#[derive(Debug)]
pub struct DigestDef {
    pub id: u32,
    pub name: String,
}

#[derive(Debug)]
pub struct ControllerHeader {
    pub inst: usize,
    /// (metadata id, name, width) in wire order.
    pub fields: Vec<(u32, String, u32)>,
}

#[derive(Debug)]
pub struct Program {
    pub name: String,
    pub instances: Vec<Instance>,
    pub slot_count: usize,
    pub stacks: Vec<Vec<usize>>,
    pub parser_start: i64,
    pub parser_states: Vec<ParserState>,
    pub verify_checksum: Vec<Stmt>,
    pub ingress: Vec<Stmt>,
    pub egress: Vec<Stmt>,
    pub compute_checksum: Vec<Stmt>,
    pub deparser: Vec<usize>,
    pub actions: Vec<Action>,
    pub tables: Vec<TableDef>,
    pub profiles: Vec<ProfileDef>,
    pub counters: Vec<ExternDef>,
    pub meters: Vec<ExternDef>,
    pub direct_meters: Vec<ExternDef>,
    pub registers: Vec<ExternDef>,
    pub digests: Vec<DigestDef>,
    pub field_lists: HashMap<u32, Vec<usize>>,
    pub packet_in: Option<ControllerHeader>,
    pub packet_out: Option<ControllerHeader>,
    pub value_sets: Vec<ValueSetDef>,
}

/// standard_metadata field numbers (instance 0).
pub mod sm {
    pub const INGRESS_PORT: usize = 0;
    pub const EGRESS_SPEC: usize = 1;
    pub const EGRESS_PORT: usize = 2;
    pub const INSTANCE_TYPE: usize = 3;
    pub const PACKET_LENGTH: usize = 4;
    pub const ENQ_TIMESTAMP: usize = 5;
    pub const ENQ_QDEPTH: usize = 6;
    pub const DEQ_TIMEDELTA: usize = 7;
    pub const DEQ_QDEPTH: usize = 8;
    pub const INGRESS_TIMESTAMP: usize = 9;
    pub const EGRESS_TIMESTAMP: usize = 10;
    pub const MCAST_GRP: usize = 11;
    pub const EGRESS_RID: usize = 12;
    pub const CHECKSUM_ERROR: usize = 13;
    pub const PARSER_ERROR: usize = 14;
    pub const FIELD_COUNT: usize = 16;
}

pub fn parse_hex(v: &Value, at: &str) -> LoadResult<u128> {
    let text = v
        .as_str()
        .ok_or_else(|| format!("{at}: expected a hex string like \"0x1f\", got {v}"))?;
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{at}: {text:?} lacks the 0x prefix"))?;
    if digits.is_empty() || digits.len() > 32 {
        return Err(format!(
            "{at}: {text:?} is not a hex value of at most 128 bits"
        ));
    }
    u128::from_str_radix(digits, 16).map_err(|_| format!("{at}: {text:?} is not hex"))
}

fn num(v: &Value, key: &str, at: &str) -> LoadResult<i64> {
    v.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("{at}: missing number {key:?}"))
}

fn arr<'a>(v: &'a Value, key: &str, at: &str) -> LoadResult<&'a Vec<Value>> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}: missing list {key:?}"))
}

fn text<'a>(v: &'a Value, key: &str, at: &str) -> LoadResult<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{at}: missing string {key:?}"))
}

fn index(v: &Value, key: &str, len: usize, what: &str, at: &str) -> LoadResult<usize> {
    let n = num(v, key, at)?;
    if n < 0 || n as usize >= len {
        return Err(format!(
            "{at}: {key} {n} is not a valid {what} index (have {len})"
        ));
    }
    Ok(n as usize)
}

fn optional_index(
    v: &Value,
    key: &str,
    len: usize,
    what: &str,
    at: &str,
) -> LoadResult<Option<usize>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => index(v, key, len, what, at).map(Some),
    }
}

fn width(v: &Value, key: &str, at: &str) -> LoadResult<u32> {
    let w = num(v, key, at)?;
    if !(1..=128).contains(&w) {
        return Err(format!("{at}: width {w} outside 1..128"));
    }
    Ok(w as u32)
}

fn field_list_ref(v: &Value, at: &str) -> LoadResult<Option<u32>> {
    match v.get("field_list") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_u64().map(|n| n as u32)),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| format!("{at}: bad field_list {s:?}")),
        Some(other) => Err(format!("{at}: bad field_list {other}")),
    }
}

/// Loads IR pieces that refer to instances, actions and tables.
struct Loader<'a> {
    instances: &'a [Instance],
    stacks: usize,
    actions: usize,
    tables: usize,
    counters: usize,
    meters: usize,
    direct_meters: usize,
    registers: usize,
    digests: usize,
    errors: usize,
}

impl Loader<'_> {
    fn slot(&self, v: &Value, at: &str) -> LoadResult<(usize, u32)> {
        let inst = index(v, "inst", self.instances.len(), "instance", at)?;
        let i = &self.instances[inst];
        let field = index(
            v,
            "field",
            i.fields.len(),
            &format!("field of {}", i.name),
            at,
        )?;
        Ok((i.base + field, i.fields[field].0))
    }

    fn header(&self, v: &Value, key: &str, at: &str) -> LoadResult<usize> {
        let inst = index(v, key, self.instances.len(), "instance", at)?;
        if !self.instances[inst].is_header {
            return Err(format!(
                "{at}: instance {} is not a header",
                self.instances[inst].name
            ));
        }
        Ok(inst)
    }

    fn dest(&self, v: &Value, at: &str) -> LoadResult<Dest> {
        let (slot, w) = self.slot(v, at)?;
        let slice = match (v.get("hi"), v.get("lo")) {
            (Some(hi), Some(lo)) => {
                let (hi, lo) = (
                    hi.as_u64().unwrap_or(u64::MAX),
                    lo.as_u64().unwrap_or(u64::MAX),
                );
                if lo > hi || hi >= w as u64 {
                    return Err(format!("{at}: slice [{hi}:{lo}] outside a {w}-bit field"));
                }
                Some((hi as u32, lo as u32))
            }
            _ => None,
        };
        let mask = crate::values::mask(w);
        Ok(match slice {
            None => Dest {
                slot,
                mask,
                lo: 0,
                is_slice: false,
            },
            Some((hi, lo)) => Dest {
                slot,
                mask: crate::values::mask(hi - lo + 1) << lo,
                lo,
                is_slice: true,
            },
        })
    }

    fn dest_at(&self, v: &Value, key: &str, at: &str) -> LoadResult<Dest> {
        let d = v.get(key).ok_or_else(|| format!("{at}: missing {key:?}"))?;
        self.dest(d, &format!("{at}.{key}"))
    }

    fn expr_at(&self, v: &Value, key: &str, at: &str) -> LoadResult<Expr> {
        let e = v
            .get(key)
            .ok_or_else(|| format!("{at}: missing expression {key:?}"))?;
        self.expr(e, &format!("{at}.{key}"))
    }

    fn exprs(&self, v: &Value, key: &str, at: &str) -> LoadResult<Vec<Expr>> {
        arr(v, key, at)?
            .iter()
            .enumerate()
            .map(|(i, e)| self.expr(e, &format!("{at}.{key}[{i}]")))
            .collect()
    }

    /// Expressions with their widths, for data that is bit-concatenated (hash, digest).
    fn sized_exprs(&self, v: &Value, key: &str, at: &str) -> LoadResult<Vec<(Expr, u32)>> {
        let items = arr(v, key, at)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, e) in items.iter().enumerate() {
            let eat = format!("{at}.{key}[{i}]");
            out.push((self.expr(e, &eat)?, width(e, "w", &eat)?));
        }
        Ok(out)
    }

    fn expr(&self, v: &Value, at: &str) -> LoadResult<Expr> {
        let op = text(v, "op", at)?;
        let w = width(v, "w", at)?;
        let sub = |key: &str| self.expr_at(v, key, at).map(Box::new);
        let bin = |op: BinOp| -> LoadResult<Expr> { Ok(Expr::Bin(op, sub("a")?, sub("b")?, w)) };
        Ok(match op {
            "const" => Expr::Const(
                parse_hex(v.get("v").unwrap_or(&Value::Null), at)? & crate::values::mask(w),
            ),
            "field" => Expr::Field(self.slot(v, at)?.0),
            "valid" => Expr::Valid(self.header(v, "inst", at)?),
            "param" => Expr::Param(num(v, "index", at)?.max(0) as usize),
            "lookahead" => Expr::Lookahead(w),
            "not" => Expr::Un(UnOp::Not, sub("a")?, w),
            "lnot" => Expr::Un(UnOp::LNot, sub("a")?, w),
            "neg" => Expr::Un(UnOp::Neg, sub("a")?, w),
            "add" => bin(BinOp::Add)?,
            "sub" => bin(BinOp::Sub)?,
            "mul" => bin(BinOp::Mul)?,
            "addsat" => bin(BinOp::AddSat)?,
            "subsat" => bin(BinOp::SubSat)?,
            "and" => bin(BinOp::And)?,
            "or" => bin(BinOp::Or)?,
            "xor" => bin(BinOp::Xor)?,
            "shl" => bin(BinOp::Shl)?,
            "shr" => bin(BinOp::Shr)?,
            "eq" => bin(BinOp::Eq)?,
            "ne" => bin(BinOp::Ne)?,
            "lt" => bin(BinOp::Lt)?,
            "le" => bin(BinOp::Le)?,
            "gt" => bin(BinOp::Gt)?,
            "ge" => bin(BinOp::Ge)?,
            "land" => bin(BinOp::LAnd)?,
            "lor" => bin(BinOp::LOr)?,
            "cond" => Expr::Cond(sub("c")?, sub("a")?, sub("b")?),
            "slice" => {
                let (hi, lo) = (num(v, "hi", at)?, num(v, "lo", at)?);
                if lo < 0 || hi < lo || hi >= 128 {
                    return Err(format!("{at}: bad slice [{hi}:{lo}]"));
                }
                Expr::Slice(sub("a")?, hi as u32, lo as u32)
            }
            "concat" => {
                let b = v.get("b").ok_or_else(|| format!("{at}: missing \"b\""))?;
                let bw = width(b, "w", &format!("{at}.b"))?;
                Expr::Concat(sub("a")?, sub("b")?, bw)
            }
            "cast" => Expr::Cast(sub("a")?, w),
            other => return Err(format!("{at}: unknown expression op {other:?}")),
        })
    }

    fn algo(&self, v: &Value, at: &str) -> LoadResult<Algo> {
        let name = text(v, "algo", at)?;
        if name == "xor16" {
            return Ok(Algo::Xor16);
        }
        HashAlgorithm::parse(name)
            .map(Algo::Standard)
            .ok_or_else(|| format!("{at}: unknown algo {name:?}"))
    }

    fn block(&self, v: &Value, key: &str, at: &str) -> LoadResult<Vec<Stmt>> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, s)| self.stmt(s, &format!("{at}.{key}[{i}]")))
                .collect(),
            Some(other) => Err(format!(
                "{at}.{key}: expected a statement list, got {other}"
            )),
        }
    }

    fn stmt(&self, v: &Value, at: &str) -> LoadResult<Stmt> {
        let kind = text(v, "kind", at)?;
        Ok(match kind {
            "assign" => Stmt::Assign(self.dest_at(v, "dst", at)?, self.expr_at(v, "src", at)?),
            "copy_header" => {
                Stmt::CopyHeader(self.header(v, "dst", at)?, self.header(v, "src", at)?)
            }
            "set_valid" => Stmt::SetValid(self.header(v, "inst", at)?, true),
            "set_invalid" => Stmt::SetValid(self.header(v, "inst", at)?, false),
            "if" => Stmt::If(
                self.expr_at(v, "cond", at)?,
                self.block(v, "then", at)?,
                self.block(v, "else", at)?,
            ),
            "apply" => self.apply(v, at)?,
            "call" => Stmt::Call(
                index(v, "action", self.actions, "action", at)?,
                self.exprs(v, "args", at)?,
            ),
            "exit" => Stmt::Exit,
            "return" => Stmt::Return,
            "stack_push" | "stack_pop" => {
                let stack = index(v, "stack", self.stacks, "stack", at)?;
                let count = num(v, "count", at)?.max(0) as usize;
                if kind == "stack_push" {
                    Stmt::StackPush(stack, count)
                } else {
                    Stmt::StackPop(stack, count)
                }
            }
            "counter_count" => Stmt::CounterCount(
                index(v, "counter", self.counters, "counter", at)?,
                self.expr_at(v, "index", at)?,
            ),
            "meter_execute" => Stmt::MeterExecute(
                index(v, "meter", self.meters, "meter", at)?,
                self.expr_at(v, "index", at)?,
                self.dest_at(v, "dst", at)?,
            ),
            "direct_meter_read" => {
                index(v, "meter", self.direct_meters, "direct meter", at)?;
                Stmt::DirectMeterRead(self.dest_at(v, "dst", at)?)
            }
            "register_read" => Stmt::RegisterRead(
                index(v, "register", self.registers, "register", at)?,
                self.expr_at(v, "index", at)?,
                self.dest_at(v, "dst", at)?,
            ),
            "register_write" => Stmt::RegisterWrite(
                index(v, "register", self.registers, "register", at)?,
                self.expr_at(v, "index", at)?,
                self.expr_at(v, "value", at)?,
            ),
            "hash" => Stmt::Hash {
                dst: self.dest_at(v, "dst", at)?,
                algo: self.algo(v, at)?,
                base: self.expr_at(v, "base", at)?,
                data: Packed::new(self.sized_exprs(v, "data", at)?),
                max: self.expr_at(v, "max", at)?,
            },
            "random" => Stmt::Random(
                self.dest_at(v, "dst", at)?,
                self.expr_at(v, "lo", at)?,
                self.expr_at(v, "hi", at)?,
            ),
            "clone" => Stmt::Clone {
                egress: match text(v, "type", at)? {
                    "I2E" => false,
                    "E2E" => true,
                    other => return Err(format!("{at}: clone type {other:?} is not I2E or E2E")),
                },
                session: self.expr_at(v, "session", at)?,
                field_list: field_list_ref(v, at)?,
            },
            "resubmit" => Stmt::Resubmit(field_list_ref(v, at)?),
            "recirculate" => Stmt::Recirculate(field_list_ref(v, at)?),
            "digest" => Stmt::Digest(
                index(v, "digest", self.digests, "digest", at)?,
                self.sized_exprs(v, "data", at)?,
            ),
            "verify_checksum" => Stmt::VerifyChecksum {
                cond: self.expr_at(v, "cond", at)?,
                data: Packed::new(self.sized_exprs(v, "data", at)?),
                checksum: self.expr_at(v, "checksum", at)?,
                algo: self.algo(v, at)?,
            },
            "update_checksum" => Stmt::UpdateChecksum {
                cond: self.expr_at(v, "cond", at)?,
                data: Packed::new(self.sized_exprs(v, "data", at)?),
                dst: self.dest_at(v, "dst", at)?,
                algo: self.algo(v, at)?,
            },
            "log" => Stmt::Log,
            "extract" if v.get("stack").is_some_and(|s| !s.is_null()) => {
                Stmt::ExtractStack(index(v, "stack", self.stacks, "stack", at)?)
            }
            "extract" => Stmt::Extract(self.header(v, "inst", at)?),
            "advance" => Stmt::Advance(self.expr_at(v, "bits", at)?),
            "verify" => {
                let error = num(v, "error", at)?;
                if error < 0 || error as usize >= self.errors.max(7) {
                    return Err(format!(
                        "{at}: error code {error} is not in the errors list"
                    ));
                }
                Stmt::Verify(self.expr_at(v, "cond", at)?, error as u32)
            }
            other => return Err(format!("{at}: unknown statement kind {other:?}")),
        })
    }

    fn apply(&self, v: &Value, at: &str) -> LoadResult<Stmt> {
        let table = index(v, "table", self.tables, "table", at)?;
        let hit_dest = match v.get("hit_dest") {
            None | Some(Value::Null) => None,
            Some(d) => Some(self.dest(d, &format!("{at}.hit_dest"))?),
        };
        let switch = match v.get("switch") {
            None | Some(Value::Null) => None,
            Some(sw) => {
                let sat = format!("{at}.switch");
                let mut cases = Vec::new();
                for (i, case) in arr(sw, "cases", &sat)?.iter().enumerate() {
                    let cat = format!("{sat}.cases[{i}]");
                    let actions = arr(case, "actions", &cat)?
                        .iter()
                        .map(|a| match a.as_u64() {
                            Some(n) if (n as usize) < self.actions => Ok(n as usize),
                            _ => Err(format!("{cat}: {a} is not an action index")),
                        })
                        .collect::<LoadResult<Vec<usize>>>()?;
                    cases.push((actions, self.block(case, "body", &cat)?));
                }
                let default = match sw.get("default") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(self.block(sw, "default", &sat)?),
                };
                Some(SwitchCases { cases, default })
            }
        };
        Ok(Stmt::Apply {
            table,
            hit_dest,
            switch,
        })
    }
}

fn load_instances(ir: &Value) -> LoadResult<(Vec<Instance>, usize)> {
    let mut instances = Vec::new();
    let mut base = 0;
    for (i, inst) in arr(ir, "instances", "ir")?.iter().enumerate() {
        let at = format!("instances[{i}]");
        let name = text(inst, "name", &at)?.to_string();
        let is_header = text(inst, "kind", &at)? == "header";
        let bits = num(inst, "bits", &at).unwrap_or(0).max(0) as u32;
        let mut fields = Vec::new();
        let (mut wire_narrow, mut wire) = (Vec::new(), Vec::new());
        // Bits the fields read so far take: a header's next field must start there.
        let mut used = 0u32;
        for (j, f) in arr(inst, "fields", &at)?.iter().enumerate() {
            let fat = format!("{at} ({name}).fields[{j}]");
            let w = width(f, "w", &fat)?;
            let offset = num(f, "offset", &fat).unwrap_or(0).max(0) as u32;
            if is_header {
                if offset != used {
                    return Err(format!(
                        "{fat}: offset {offset}, but the fields before it end at bit {used}"
                    ));
                }
                match Piece::split(offset as usize, w)[..] {
                    [piece] => wire_narrow.push(piece),
                    ref pieces => {
                        wire_narrow.push(Piece::NONE);
                        wire.extend(pieces.iter().enumerate().map(|(k, piece)| WireBits {
                            slot: base + j,
                            piece: *piece,
                            first: k == 0,
                        }))
                    }
                }
            }
            fields.push((w, offset));
            used += w;
        }
        if is_header && used != bits {
            return Err(format!(
                "{at} ({name}): fields make {used} bits, the header has {bits}"
            ));
        }
        if is_header && !bits.is_multiple_of(8) {
            return Err(format!(
                "{at} ({name}): header size {bits} bits is not whole bytes"
            ));
        }
        instances.push(Instance {
            name,
            is_header,
            bits,
            base,
            emit: match is_header {
                true => WordPlan::new(fields.iter().enumerate().map(|(j, (w, _))| (base + j, *w))),
                false => WordPlan::default(),
            },
            fields,
            wire_narrow,
            wire,
        });
        base += instances.last().map(|i| i.fields.len()).unwrap_or(0);
    }
    match instances.first() {
        Some(i) if i.name == "standard_metadata" && i.fields.len() == sm::FIELD_COUNT => {}
        _ => return Err("instances[0] must be standard_metadata with its 16 fields".into()),
    }
    Ok((instances, base))
}

fn load_externs(ir: &Value, key: &str, tables: usize) -> LoadResult<Vec<ExternDef>> {
    let Some(items) = ir.get(key).and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let unit = match e.get("unit").and_then(Value::as_str).unwrap_or("packets") {
            "packets" => Unit::Packets,
            "bytes" => Unit::Bytes,
            "both" => Unit::Both,
            other => return Err(format!("{at}: unknown unit {other:?}")),
        };
        let size = num(e, "size", &at).unwrap_or(0);
        if !(0..=1 << 24).contains(&size) {
            return Err(format!("{at}: size {size} outside 0..2^24"));
        }
        let width = if key == "registers" {
            width(e, "w", &at)?
        } else {
            0
        };
        if key.starts_with("direct") {
            index(e, "table", tables, "table", &at)?;
        }
        out.push(ExternDef {
            id: num(e, "id", &at).unwrap_or(0) as u32,
            name: text(e, "name", &at).unwrap_or("").to_string(),
            size: size as usize,
            unit,
            width,
        });
    }
    Ok(out)
}

fn load_actions(ir: &Value, loader: &Loader) -> LoadResult<Vec<Action>> {
    let mut actions = Vec::new();
    for (i, a) in arr(ir, "actions", "ir")?.iter().enumerate() {
        let at = format!("actions[{i}]");
        let mut params = Vec::new();
        for (j, p) in arr(a, "params", &at)?.iter().enumerate() {
            let pat = format!("{at}.params[{j}]");
            params.push((num(p, "id", &pat)? as u32, width(p, "w", &pat)?));
        }
        if params.len() > MAX_PARAMS {
            return Err(format!("{at}: more than {MAX_PARAMS} action parameters"));
        }
        let name = text(a, "name", &at)?.to_string();
        let body = loader.block(a, "body", &format!("{at} ({name})"))?;
        if applies_a_table(&body) {
            return Err(format!("{at} ({name}): an action cannot apply a table"));
        }
        actions.push(Action {
            id: num(a, "id", &at)? as u32,
            name,
            params,
            body,
        });
    }
    Ok(actions)
}

/// Whether statements apply a table (an action's may not: the data path runs an action
/// while it holds the table entry that chose it).
fn applies_a_table(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Apply { .. } => true,
        Stmt::If(_, then, other) => applies_a_table(then) || applies_a_table(other),
        _ => false,
    })
}

fn args(v: &Value, at: &str) -> LoadResult<Vec<u128>> {
    match v.get("args") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| parse_hex(a, &format!("{at}.args[{i}]")))
            .collect(),
        Some(other) => Err(format!("{at}: args must be a list, got {other}")),
    }
}

fn load_table(
    t: &Value,
    at: &str,
    loader: &Loader,
    counts: (usize, usize, usize),
) -> LoadResult<TableDef> {
    let mut keys = Vec::new();
    for (j, k) in arr(t, "keys", at)?.iter().enumerate() {
        let kat = format!("{at}.keys[{j}]");
        keys.push(KeyDef {
            kind: match_kind(k, &kat)?,
            width: width(k, "w", &kat)?,
            expr: loader.expr_at(k, "expr", &kat)?,
        });
    }
    let mut actions = Vec::new();
    for (j, a) in arr(t, "actions", at)?.iter().enumerate() {
        let aat = format!("{at}.actions[{j}]");
        let scope = match a
            .get("scope")
            .and_then(Value::as_str)
            .unwrap_or("table_and_default")
        {
            "table_and_default" => Scope::TableAndDefault,
            "table_only" => Scope::TableOnly,
            "default_only" => Scope::DefaultOnly,
            other => return Err(format!("{aat}: unknown scope {other:?}")),
        };
        actions.push((index(a, "action", loader.actions, "action", &aat)?, scope));
    }
    let default = t
        .get("default_action")
        .ok_or_else(|| format!("{at}: missing default_action"))?;
    let dat = format!("{at}.default_action");
    let mut const_entries = Vec::new();
    if let Some(items) = t.get("const_entries").and_then(Value::as_array) {
        for (j, e) in items.iter().enumerate() {
            let eat = format!("{at}.const_entries[{j}]");
            let action = e
                .get("action")
                .ok_or_else(|| format!("{eat}: missing action"))?;
            const_entries.push(ConstEntry {
                priority: num(e, "priority", &eat).unwrap_or(0) as i32,
                matches: arr(e, "matches", &eat)?.clone(),
                action: index(action, "action", loader.actions, "action", &eat)?,
                args: args(action, &eat)?,
                is_const: e.get("const").and_then(Value::as_bool).unwrap_or(false),
            });
        }
    }
    // Direct counters count in the table entries themselves; only the reference is checked.
    optional_index(t, "direct_counter", counts.0, "direct counter", at)?;
    let size = num(t, "size", at).unwrap_or(1024);
    let mut selector_keys = Vec::new();
    if let Some(items) = t.get("selector_keys").and_then(Value::as_array) {
        for (j, k) in items.iter().enumerate() {
            let kat = format!("{at}.selector_keys[{j}]");
            selector_keys.push((loader.expr_at(k, "expr", &kat)?, width(k, "w", &kat)?));
        }
    }
    Ok(TableDef {
        id: num(t, "id", at)? as u32,
        name: text(t, "name", at)?.to_string(),
        size: size.clamp(1, 1 << 24) as usize,
        keys,
        actions,
        default_action: index(default, "action", loader.actions, "action", &dat)?,
        default_args: args(default, &dat)?,
        default_const: default
            .get("const")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        const_entries,
        is_const: t.get("is_const").and_then(Value::as_bool).unwrap_or(false),
        direct_meter: optional_index(t, "direct_meter", counts.1, "direct meter", at)?,
        support_timeout: t
            .get("support_timeout")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        implementation: optional_index(t, "implementation", counts.2, "action profile", at)?,
        selector_keys: Packed::new(selector_keys),
    })
}

fn match_kind(v: &Value, at: &str) -> LoadResult<MatchKind> {
    let name = text(v, "match", at)?;
    MatchKind::parse(name).ok_or_else(|| format!("{at}: unknown match kind {name:?}"))
}

/// Loads the IR's `value_sets` (absent: none).
fn load_value_sets(ir: &Value) -> LoadResult<Vec<ValueSetDef>> {
    let Some(items) = ir.get("value_sets").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, v) in items.iter().enumerate() {
        let at = format!("value_sets[{i}]");
        let mut fields = Vec::new();
        for (j, f) in arr(v, "fields", &at)?.iter().enumerate() {
            let fat = format!("{at}.fields[{j}]");
            fields.push((match_kind(f, &fat)?, width(f, "w", &fat)?));
        }
        if fields.is_empty() {
            return Err(format!("{at}: a value set needs at least one field"));
        }
        let (id, size) = (num(v, "id", &at)?, num(v, "size", &at)?);
        if id < 0 || size < 0 {
            return Err(format!("{at}: id and size must not be negative"));
        }
        out.push(ValueSetDef {
            id: id as u32,
            name: text(v, "name", &at).unwrap_or("").to_string(),
            size: size as usize,
            fields,
        });
    }
    Ok(out)
}

fn load_profiles(ir: &Value, loader: &Loader, tables: usize) -> LoadResult<Vec<ProfileDef>> {
    let Some(items) = ir.get("action_profiles").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, p) in items.iter().enumerate() {
        let at = format!("action_profiles[{i}]");
        let (selector, size_by) = match p.get("selector") {
            None | Some(Value::Null) => (None, SizeBy::Weights),
            Some(sel) => (
                Some((loader.algo(sel, &at)?, width(sel, "output_width", &at)?)),
                size_by(sel, &at)?,
            ),
        };
        let mut users = Vec::new();
        for t in arr(p, "tables", &at)? {
            match t.as_u64() {
                Some(n) if (n as usize) < tables => users.push(n as usize),
                _ => return Err(format!("{at}: table {t} does not exist")),
            }
        }
        out.push(ProfileDef {
            id: num(p, "id", &at)? as u32,
            name: text(p, "name", &at)?.to_string(),
            size: num(p, "size", &at)?.clamp(1, 1 << 24) as usize,
            max_group_size: num(p, "max_group_size", &at).unwrap_or(0).max(0) as usize,
            selector,
            size_by,
            tables: users,
        });
    }
    Ok(out)
}

/// A selector's `size_semantics` (absent: p4c's default, sum_of_weights).
fn size_by(sel: &Value, at: &str) -> LoadResult<SizeBy> {
    match sel.get("size_semantics").and_then(Value::as_str) {
        None | Some("sum_of_weights") => Ok(SizeBy::Weights),
        Some("sum_of_members") => Ok(SizeBy::Members),
        Some(other) => Err(format!(
            "{at}.selector.size_semantics {other:?} is neither sum_of_weights nor sum_of_members"
        )),
    }
}

fn load_parser(
    ir: &Value,
    loader: &Loader,
    value_sets: &[ValueSetDef],
) -> LoadResult<(i64, Vec<ParserState>)> {
    let p = ir.get("parser").ok_or("ir: missing parser")?;
    let states_json = arr(p, "states", "parser")?;
    let n = states_json.len() as i64;
    let target = |t: i64, at: &str| -> LoadResult<i64> {
        if t == -1 || t == -2 || (0..n).contains(&t) {
            Ok(t)
        } else {
            Err(format!("{at}: state target {t} is not a state, -1 or -2"))
        }
    };
    let start = target(num(p, "start", "parser")?, "parser.start")?;
    let mut states = Vec::new();
    for (i, s) in states_json.iter().enumerate() {
        let name = text(s, "name", &format!("parser.states[{i}]"))
            .unwrap_or("?")
            .to_string();
        let at = format!("parser.states[{i}] ({name})");
        let body = loader.block(s, "body", &at)?;
        let tr = s
            .get("transition")
            .ok_or_else(|| format!("{at}: missing transition"))?;
        let tat = format!("{at}.transition");
        let transition = match text(tr, "kind", &tat)? {
            "goto" => Transition::Goto(target(num(tr, "next", &tat)?, &tat)?),
            "select" => {
                let keys = loader.exprs(tr, "keys", &tat)?;
                let mut cases = Vec::new();
                for (j, c) in arr(tr, "cases", &tat)?.iter().enumerate() {
                    let cat = format!("{tat}.cases[{j}]");
                    let sets = arr(c, "sets", &cat)?
                        .iter()
                        .map(|k| keyset(k, value_sets.len(), &cat))
                        .collect::<LoadResult<Vec<KeySet>>>()?;
                    if let [KeySet::ValueSet(vs)] = sets[..] {
                        let def = &value_sets[vs];
                        if def.fields.len() != keys.len() {
                            return Err(format!(
                                "{cat}: value set {} has {} fields for {} select keys",
                                def.name,
                                def.fields.len(),
                                keys.len()
                            ));
                        }
                    } else if sets.len() != keys.len() && sets[..] != [KeySet::Any] {
                        return Err(format!(
                            "{cat}: {} keysets for {} select keys",
                            sets.len(),
                            keys.len()
                        ));
                    }
                    cases.push((sets, target(num(c, "next", &cat)?, &cat)?));
                }
                Transition::Select { keys, cases }
            }
            other => return Err(format!("{tat}: unknown transition kind {other:?}")),
        };
        states.push(ParserState { body, transition });
    }
    Ok((start, states))
}

fn keyset(k: &Value, value_sets: usize, at: &str) -> LoadResult<KeySet> {
    let get = |key: &str| parse_hex(k.get(key).unwrap_or(&Value::Null), &format!("{at}.{key}"));
    Ok(match text(k, "kind", at)? {
        "exact" => KeySet::Exact(get("v")?),
        "mask" => {
            let m = get("m")?;
            KeySet::Mask(get("v")? & m, m)
        }
        "range" => KeySet::Range(get("lo")?, get("hi")?),
        "any" => KeySet::Any,
        "value_set" => KeySet::ValueSet(index(k, "set", value_sets, "value set", at)?),
        other => return Err(format!("{at}: unknown keyset kind {other:?}")),
    })
}

fn load_controller_header(
    ir: &Value,
    key: &str,
    instances: &[Instance],
) -> LoadResult<Option<ControllerHeader>> {
    let Some(h) = ir.get("controller_headers").and_then(|c| c.get(key)) else {
        return Ok(None);
    };
    let at = format!("controller_headers.{key}");
    let inst = index(h, "inst", instances.len(), "instance", &at)?;
    let mut fields = Vec::new();
    for (i, f) in arr(h, "fields", &at)?.iter().enumerate() {
        let fat = format!("{at}.fields[{i}]");
        fields.push((
            num(f, "id", &fat)? as u32,
            text(f, "name", &fat)?.to_string(),
            width(f, "w", &fat)?,
        ));
    }
    Ok(Some(ControllerHeader { inst, fields }))
}

fn controls(ir: &Value, loader: &Loader, name: &str) -> LoadResult<Vec<Stmt>> {
    match ir.get("controls").and_then(|c| c.get(name)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(c) => loader.block(c, "body", &format!("controls.{name}")),
    }
}

pub fn load(ir: &Value) -> LoadResult<Program> {
    if ir.get("format").and_then(Value::as_str) != Some("dplab-p4-ir") {
        return Err("ir: \"format\" must be \"dplab-p4-ir\"".into());
    }
    if ir.get("version").and_then(Value::as_i64) != Some(1) {
        return Err("ir: only \"version\": 1 is supported".into());
    }
    let (instances, slot_count) = load_instances(ir)?;
    let mut stacks = Vec::new();
    if let Some(items) = ir.get("stacks").and_then(Value::as_array) {
        for (i, s) in items.iter().enumerate() {
            let at = format!("stacks[{i}]");
            let members = arr(s, "instances", &at)?
                .iter()
                .map(|m| match m.as_u64() {
                    Some(n)
                        if (n as usize) < instances.len() && instances[n as usize].is_header =>
                    {
                        Ok(n as usize)
                    }
                    _ => Err(format!("{at}: {m} is not a header instance")),
                })
                .collect::<LoadResult<Vec<usize>>>()?;
            stacks.push(members);
        }
    }
    let len_of = |key: &str| {
        ir.get(key)
            .and_then(Value::as_array)
            .map(|a| a.len())
            .unwrap_or(0)
    };
    let loader = Loader {
        instances: &instances,
        stacks: stacks.len(),
        actions: len_of("actions"),
        tables: len_of("tables"),
        counters: len_of("counters"),
        meters: len_of("meters"),
        direct_meters: len_of("direct_meters"),
        registers: len_of("registers"),
        digests: len_of("digests"),
        errors: len_of("errors"),
    };
    let actions = load_actions(ir, &loader)?;
    let counts = (
        len_of("direct_counters"),
        len_of("direct_meters"),
        len_of("action_profiles"),
    );
    let tables = arr(ir, "tables", "ir")?
        .iter()
        .enumerate()
        .map(|(i, t)| load_table(t, &format!("tables[{i}]"), &loader, counts))
        .collect::<LoadResult<Vec<TableDef>>>()?;
    let profiles = load_profiles(ir, &loader, tables.len())?;
    let value_sets = load_value_sets(ir)?;
    let (parser_start, parser_states) = load_parser(ir, &loader, &value_sets)?;
    let deparser = match ir
        .get("deparser")
        .and_then(|d| d.get("emit"))
        .and_then(Value::as_array)
    {
        Some(items) => items
            .iter()
            .map(|m| match m.as_u64() {
                Some(n) if (n as usize) < instances.len() && instances[n as usize].is_header => {
                    Ok(n as usize)
                }
                _ => Err(format!("deparser.emit: {m} is not a header instance")),
            })
            .collect::<LoadResult<Vec<usize>>>()?,
        None => return Err("ir: missing deparser.emit".into()),
    };
    let mut field_lists = HashMap::new();
    if let Some(map) = ir.get("field_lists").and_then(Value::as_object) {
        for (k, refs) in map {
            let at = format!("field_lists.{k}");
            let n: u32 = k
                .parse()
                .map_err(|_| format!("{at}: key is not a number"))?;
            let slots = refs
                .as_array()
                .ok_or_else(|| format!("{at}: expected a list"))?
                .iter()
                .map(|r| loader.slot(r, &at).map(|s| s.0))
                .collect::<LoadResult<Vec<usize>>>()?;
            field_lists.insert(n, slots);
        }
    }
    let mut digests = Vec::new();
    if let Some(items) = ir.get("digests").and_then(Value::as_array) {
        for (i, d) in items.iter().enumerate() {
            let at = format!("digests[{i}]");
            for f in arr(d, "fields", &at)? {
                width(f, "w", &at)?;
            }
            digests.push(DigestDef {
                id: num(d, "id", &at)? as u32,
                name: text(d, "name", &at)?.into(),
            });
        }
    }
    load_externs(ir, "direct_counters", tables.len())?;
    Ok(Program {
        name: ir
            .get("program")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        verify_checksum: controls(ir, &loader, "verify_checksum")?,
        ingress: controls(ir, &loader, "ingress")?,
        egress: controls(ir, &loader, "egress")?,
        compute_checksum: controls(ir, &loader, "compute_checksum")?,
        counters: load_externs(ir, "counters", tables.len())?,
        meters: load_externs(ir, "meters", tables.len())?,
        direct_meters: load_externs(ir, "direct_meters", tables.len())?,
        registers: load_externs(ir, "registers", tables.len())?,
        packet_in: load_controller_header(ir, "packet_in", &instances)?,
        packet_out: load_controller_header(ir, "packet_out", &instances)?,
        digests,
        field_lists,
        value_sets,
        deparser,
        parser_start,
        parser_states,
        actions,
        tables,
        profiles,
        stacks,
        slot_count,
        instances,
    })
}
