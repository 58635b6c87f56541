//! The loaded pipeline: the IR of docs/p4-ir.md turned into flat vectors and small enums
//! the interpreter walks. Loading checks every reference, so execution never indexes out
//! of bounds on a bad IR; every error names where in the IR it is.

use std::collections::HashMap;

use serde_json::Value;

use crate::ir::{
    DestIr, ExprIr, ExprNode, ExternIr, FieldListRef, Ir, KeySetIr, SelectorIr, StmtIr, SwitchIr,
    TableIr, TransitionIr,
};

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
    Div,
    Mod,
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
    /// Bits from the parser's cursor to the packet's end (w bits, saturating).
    Remaining(u32),
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
    hex_value(text).map_err(|e| format!("{at}: {e}"))
}

/// A bit string written as hex with `0x` (docs/p4-ir.md), at most 128 bits.
pub fn hex_value(text: &str) -> LoadResult<u128> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{text:?} lacks the 0x prefix"))?;
    if digits.is_empty() || digits.len() > 32 {
        return Err(format!("{text:?} is not a hex value of at most 128 bits"));
    }
    u128::from_str_radix(digits, 16).map_err(|_| format!("{text:?} is not hex"))
}

/// `n` as an index into a list of `len` `what`s; `key` names it in the error.
fn index(n: i64, key: &str, len: usize, what: &str, at: &str) -> LoadResult<usize> {
    if n < 0 || n as usize >= len {
        return Err(format!(
            "{at}: {key} {n} is not a valid {what} index (have {len})"
        ));
    }
    Ok(n as usize)
}

fn optional_index(
    n: Option<i64>,
    key: &str,
    len: usize,
    what: &str,
    at: &str,
) -> LoadResult<Option<usize>> {
    n.map(|n| index(n, key, len, what, at)).transpose()
}

fn width(w: i64, at: &str) -> LoadResult<u32> {
    if !(1..=128).contains(&w) {
        return Err(format!("{at}: width {w} outside 1..128"));
    }
    Ok(w as u32)
}

fn field_list_ref(r: &Option<FieldListRef>, at: &str) -> LoadResult<Option<u32>> {
    match r {
        None => Ok(None),
        Some(FieldListRef::Number(n)) => Ok(Some(*n as u32)),
        Some(FieldListRef::Text(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| format!("{at}: bad field_list {s:?}")),
    }
}

/// A list of instance indices that must all be headers (stack members, deparser emits).
fn header_list(items: &[Value], instances: &[Instance], at: &str) -> LoadResult<Vec<usize>> {
    items
        .iter()
        .map(|m| match m.as_u64() {
            Some(n) if (n as usize) < instances.len() && instances[n as usize].is_header => {
                Ok(n as usize)
            }
            _ => Err(format!("{at}: {m} is not a header instance")),
        })
        .collect()
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
    fn slot(&self, inst: i64, field: i64, at: &str) -> LoadResult<(usize, u32)> {
        let inst = index(inst, "inst", self.instances.len(), "instance", at)?;
        let i = &self.instances[inst];
        let what = format!("field of {}", i.name);
        let field = index(field, "field", i.fields.len(), &what, at)?;
        Ok((i.base + field, i.fields[field].0))
    }

    fn header(&self, inst: i64, key: &str, at: &str) -> LoadResult<usize> {
        let inst = index(inst, key, self.instances.len(), "instance", at)?;
        if !self.instances[inst].is_header {
            return Err(format!(
                "{at}: instance {} is not a header",
                self.instances[inst].name
            ));
        }
        Ok(inst)
    }

    fn dest(&self, d: &DestIr, at: &str) -> LoadResult<Dest> {
        let (slot, w) = self.slot(d.inst, d.field, at)?;
        let slice = match (d.hi, d.lo) {
            (Some(hi), Some(lo)) => {
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

    fn dest_at(&self, d: &DestIr, key: &str, at: &str) -> LoadResult<Dest> {
        self.dest(d, &format!("{at}.{key}"))
    }

    fn expr_at(&self, e: &ExprIr, key: &str, at: &str) -> LoadResult<Expr> {
        self.expr(e, &format!("{at}.{key}"))
    }

    fn exprs(&self, items: &[ExprIr], key: &str, at: &str) -> LoadResult<Vec<Expr>> {
        items
            .iter()
            .enumerate()
            .map(|(i, e)| self.expr(e, &format!("{at}.{key}[{i}]")))
            .collect()
    }

    /// Expressions with their widths, for data that is bit-concatenated (hash, digest).
    fn sized_exprs(&self, items: &[ExprIr], key: &str, at: &str) -> LoadResult<Vec<(Expr, u32)>> {
        let mut out = Vec::with_capacity(items.len());
        for (i, e) in items.iter().enumerate() {
            let eat = format!("{at}.{key}[{i}]");
            out.push((self.expr(e, &eat)?, width(e.w, &eat)?));
        }
        Ok(out)
    }

    fn expr(&self, e: &ExprIr, at: &str) -> LoadResult<Expr> {
        let w = width(e.w, at)?;
        let sub = |key: &str, x: &ExprIr| self.expr_at(x, key, at).map(Box::new);
        let un = |op: UnOp, a: &ExprIr| -> LoadResult<Expr> { Ok(Expr::Un(op, sub("a", a)?, w)) };
        let bin = |op: BinOp, a: &ExprIr, b: &ExprIr| -> LoadResult<Expr> {
            Ok(Expr::Bin(op, sub("a", a)?, sub("b", b)?, w))
        };
        Ok(match &e.node {
            ExprNode::Const { v } => Expr::Const(parse_hex(v, at)? & crate::values::mask(w)),
            ExprNode::Field { inst, field } => Expr::Field(self.slot(*inst, *field, at)?.0),
            ExprNode::Valid { inst } => Expr::Valid(self.header(*inst, "inst", at)?),
            ExprNode::Param { index } => Expr::Param((*index).max(0) as usize),
            ExprNode::Lookahead => Expr::Lookahead(w),
            ExprNode::Remaining => Expr::Remaining(w),
            ExprNode::Not { a } => un(UnOp::Not, a)?,
            ExprNode::LNot { a } => un(UnOp::LNot, a)?,
            ExprNode::Neg { a } => un(UnOp::Neg, a)?,
            ExprNode::Add { a, b } => bin(BinOp::Add, a, b)?,
            ExprNode::Sub { a, b } => bin(BinOp::Sub, a, b)?,
            ExprNode::Mul { a, b } => bin(BinOp::Mul, a, b)?,
            ExprNode::Div { a, b } => bin(BinOp::Div, a, b)?,
            ExprNode::Mod { a, b } => bin(BinOp::Mod, a, b)?,
            ExprNode::AddSat { a, b } => bin(BinOp::AddSat, a, b)?,
            ExprNode::SubSat { a, b } => bin(BinOp::SubSat, a, b)?,
            ExprNode::And { a, b } => bin(BinOp::And, a, b)?,
            ExprNode::Or { a, b } => bin(BinOp::Or, a, b)?,
            ExprNode::Xor { a, b } => bin(BinOp::Xor, a, b)?,
            ExprNode::Shl { a, b } => bin(BinOp::Shl, a, b)?,
            ExprNode::Shr { a, b } => bin(BinOp::Shr, a, b)?,
            ExprNode::Eq { a, b } => bin(BinOp::Eq, a, b)?,
            ExprNode::Ne { a, b } => bin(BinOp::Ne, a, b)?,
            ExprNode::Lt { a, b } => bin(BinOp::Lt, a, b)?,
            ExprNode::Le { a, b } => bin(BinOp::Le, a, b)?,
            ExprNode::Gt { a, b } => bin(BinOp::Gt, a, b)?,
            ExprNode::Ge { a, b } => bin(BinOp::Ge, a, b)?,
            ExprNode::LAnd { a, b } => bin(BinOp::LAnd, a, b)?,
            ExprNode::LOr { a, b } => bin(BinOp::LOr, a, b)?,
            ExprNode::Cond { c, a, b } => Expr::Cond(sub("c", c)?, sub("a", a)?, sub("b", b)?),
            ExprNode::Slice { a, hi, lo } => {
                if *lo < 0 || hi < lo || *hi >= 128 {
                    return Err(format!("{at}: bad slice [{hi}:{lo}]"));
                }
                Expr::Slice(sub("a", a)?, *hi as u32, *lo as u32)
            }
            ExprNode::Concat { a, b } => {
                let bw = width(b.w, &format!("{at}.b"))?;
                Expr::Concat(sub("a", a)?, sub("b", b)?, bw)
            }
            ExprNode::Cast { a } => Expr::Cast(sub("a", a)?, w),
        })
    }

    fn algo(&self, name: &str, at: &str) -> LoadResult<Algo> {
        if name == "xor16" {
            return Ok(Algo::Xor16);
        }
        HashAlgorithm::parse(name)
            .map(Algo::Standard)
            .ok_or_else(|| format!("{at}: unknown algo {name:?}"))
    }

    fn block(&self, body: &Option<Vec<StmtIr>>, key: &str, at: &str) -> LoadResult<Vec<Stmt>> {
        body.iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| self.stmt(s, &format!("{at}.{key}[{i}]")))
            .collect()
    }

    fn stmt(&self, v: &StmtIr, at: &str) -> LoadResult<Stmt> {
        let counters = |n: i64, key: &str, len: usize, what: &str| index(n, key, len, what, at);
        Ok(match v {
            StmtIr::Assign { dst, src } => {
                Stmt::Assign(self.dest_at(dst, "dst", at)?, self.expr_at(src, "src", at)?)
            }
            StmtIr::CopyHeader { dst, src } => {
                Stmt::CopyHeader(self.header(*dst, "dst", at)?, self.header(*src, "src", at)?)
            }
            StmtIr::SetValid { inst } => Stmt::SetValid(self.header(*inst, "inst", at)?, true),
            StmtIr::SetInvalid { inst } => Stmt::SetValid(self.header(*inst, "inst", at)?, false),
            StmtIr::If {
                cond,
                then,
                otherwise,
            } => Stmt::If(
                self.expr_at(cond, "cond", at)?,
                self.block(then, "then", at)?,
                self.block(otherwise, "else", at)?,
            ),
            StmtIr::Apply {
                table,
                hit_dest,
                switch,
            } => self.apply(*table, hit_dest, switch, at)?,
            StmtIr::Call { action, args } => Stmt::Call(
                counters(*action, "action", self.actions, "action")?,
                self.exprs(args, "args", at)?,
            ),
            StmtIr::Exit => Stmt::Exit,
            StmtIr::Return => Stmt::Return,
            StmtIr::StackPush { stack, count } => Stmt::StackPush(
                counters(*stack, "stack", self.stacks, "stack")?,
                (*count).max(0) as usize,
            ),
            StmtIr::StackPop { stack, count } => Stmt::StackPop(
                counters(*stack, "stack", self.stacks, "stack")?,
                (*count).max(0) as usize,
            ),
            StmtIr::CounterCount { counter, index } => Stmt::CounterCount(
                counters(*counter, "counter", self.counters, "counter")?,
                self.expr_at(index, "index", at)?,
            ),
            StmtIr::MeterExecute { meter, index, dst } => Stmt::MeterExecute(
                counters(*meter, "meter", self.meters, "meter")?,
                self.expr_at(index, "index", at)?,
                self.dest_at(dst, "dst", at)?,
            ),
            StmtIr::DirectMeterRead { meter, dst } => {
                counters(*meter, "meter", self.direct_meters, "direct meter")?;
                Stmt::DirectMeterRead(self.dest_at(dst, "dst", at)?)
            }
            StmtIr::RegisterRead {
                register,
                index,
                dst,
            } => Stmt::RegisterRead(
                counters(*register, "register", self.registers, "register")?,
                self.expr_at(index, "index", at)?,
                self.dest_at(dst, "dst", at)?,
            ),
            StmtIr::RegisterWrite {
                register,
                index,
                value,
            } => Stmt::RegisterWrite(
                counters(*register, "register", self.registers, "register")?,
                self.expr_at(index, "index", at)?,
                self.expr_at(value, "value", at)?,
            ),
            StmtIr::Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => Stmt::Hash {
                dst: self.dest_at(dst, "dst", at)?,
                algo: self.algo(algo, at)?,
                base: self.expr_at(base, "base", at)?,
                data: Packed::new(self.sized_exprs(data, "data", at)?),
                max: self.expr_at(max, "max", at)?,
            },
            StmtIr::Random { dst, lo, hi } => Stmt::Random(
                self.dest_at(dst, "dst", at)?,
                self.expr_at(lo, "lo", at)?,
                self.expr_at(hi, "hi", at)?,
            ),
            StmtIr::Clone {
                kind,
                session,
                field_list,
            } => Stmt::Clone {
                egress: match kind.as_str() {
                    "I2E" => false,
                    "E2E" => true,
                    other => return Err(format!("{at}: clone type {other:?} is not I2E or E2E")),
                },
                session: self.expr_at(session, "session", at)?,
                field_list: field_list_ref(field_list, at)?,
            },
            StmtIr::Resubmit { field_list } => Stmt::Resubmit(field_list_ref(field_list, at)?),
            StmtIr::Recirculate { field_list } => {
                Stmt::Recirculate(field_list_ref(field_list, at)?)
            }
            StmtIr::Digest { digest, data } => Stmt::Digest(
                counters(*digest, "digest", self.digests, "digest")?,
                self.sized_exprs(data, "data", at)?,
            ),
            StmtIr::VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
            } => Stmt::VerifyChecksum {
                cond: self.expr_at(cond, "cond", at)?,
                data: Packed::new(self.sized_exprs(data, "data", at)?),
                checksum: self.expr_at(checksum, "checksum", at)?,
                algo: self.algo(algo, at)?,
            },
            StmtIr::UpdateChecksum {
                cond,
                data,
                dst,
                algo,
            } => Stmt::UpdateChecksum {
                cond: self.expr_at(cond, "cond", at)?,
                data: Packed::new(self.sized_exprs(data, "data", at)?),
                dst: self.dest_at(dst, "dst", at)?,
                algo: self.algo(algo, at)?,
            },
            StmtIr::Log => Stmt::Log,
            StmtIr::Extract {
                stack: Some(stack), ..
            } => Stmt::ExtractStack(counters(*stack, "stack", self.stacks, "stack")?),
            StmtIr::Extract { inst, .. } => {
                let inst = inst.ok_or_else(|| format!("{at}: missing number \"inst\""))?;
                Stmt::Extract(self.header(inst, "inst", at)?)
            }
            StmtIr::Advance { bits } => Stmt::Advance(self.expr_at(bits, "bits", at)?),
            StmtIr::Verify { error, cond } => {
                if *error < 0 || *error as usize >= self.errors.max(7) {
                    return Err(format!(
                        "{at}: error code {error} is not in the errors list"
                    ));
                }
                Stmt::Verify(self.expr_at(cond, "cond", at)?, *error as u32)
            }
        })
    }

    fn apply(
        &self,
        table: i64,
        hit_dest: &Option<DestIr>,
        switch: &Option<SwitchIr>,
        at: &str,
    ) -> LoadResult<Stmt> {
        let table = index(table, "table", self.tables, "table", at)?;
        let hit_dest = match hit_dest {
            None => None,
            Some(d) => Some(self.dest(d, &format!("{at}.hit_dest"))?),
        };
        let switch = match switch {
            None => None,
            Some(sw) => {
                let sat = format!("{at}.switch");
                let mut cases = Vec::new();
                for (i, case) in sw.cases.iter().enumerate() {
                    let cat = format!("{sat}.cases[{i}]");
                    let actions = case
                        .actions
                        .iter()
                        .map(|a| match a.as_u64() {
                            Some(n) if (n as usize) < self.actions => Ok(n as usize),
                            _ => Err(format!("{cat}: {a} is not an action index")),
                        })
                        .collect::<LoadResult<Vec<usize>>>()?;
                    cases.push((actions, self.block(&case.body, "body", &cat)?));
                }
                let default = match &sw.default {
                    None => None,
                    Some(_) => Some(self.block(&sw.default, "default", &sat)?),
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

fn load_instances(ir: &Ir) -> LoadResult<(Vec<Instance>, usize)> {
    let mut instances = Vec::new();
    let mut base = 0;
    for (i, inst) in ir.instances.iter().enumerate() {
        let at = format!("instances[{i}]");
        let name = inst.name.clone();
        let is_header = inst.kind == "header";
        let bits = inst.bits.max(0) as u32;
        let mut fields = Vec::new();
        let (mut wire_narrow, mut wire) = (Vec::new(), Vec::new());
        // Bits the fields read so far take: a header's next field must start there.
        let mut used = 0u32;
        for (j, f) in inst.fields.iter().enumerate() {
            let fat = format!("{at} ({name}).fields[{j}]");
            let w = width(f.w, &fat)?;
            let offset = f.offset.max(0) as u32;
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

fn load_externs(items: &[ExternIr], key: &str, tables: usize) -> LoadResult<Vec<ExternDef>> {
    let mut out = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let unit = match e.unit.as_deref().unwrap_or("packets") {
            "packets" => Unit::Packets,
            "bytes" => Unit::Bytes,
            "both" => Unit::Both,
            other => return Err(format!("{at}: unknown unit {other:?}")),
        };
        if !(0..=1 << 24).contains(&e.size) {
            return Err(format!("{at}: size {} outside 0..2^24", e.size));
        }
        let width = if key == "registers" {
            let w = e.w.ok_or_else(|| format!("{at}: missing number \"w\""))?;
            width(w, &at)?
        } else {
            0
        };
        if key.starts_with("direct") {
            let table = e
                .table
                .ok_or_else(|| format!("{at}: missing number \"table\""))?;
            index(table, "table", tables, "table", &at)?;
        }
        out.push(ExternDef {
            id: e.id as u32,
            name: e.name.clone(),
            size: e.size as usize,
            unit,
            width,
        });
    }
    Ok(out)
}

fn load_actions(ir: &Ir, loader: &Loader) -> LoadResult<Vec<Action>> {
    let mut actions = Vec::new();
    for (i, a) in ir.actions.iter().enumerate() {
        let at = format!("actions[{i}]");
        let mut params = Vec::new();
        for (j, p) in a.params.iter().enumerate() {
            let pat = format!("{at}.params[{j}]");
            params.push((p.id as u32, width(p.w, &pat)?));
        }
        if params.len() > MAX_PARAMS {
            return Err(format!("{at}: more than {MAX_PARAMS} action parameters"));
        }
        let name = a.name.clone();
        let body = loader.block(&a.body, "body", &format!("{at} ({name})"))?;
        if applies_a_table(&body) {
            return Err(format!("{at} ({name}): an action cannot apply a table"));
        }
        actions.push(Action {
            id: a.id as u32,
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

fn args(items: &Option<Vec<Value>>, at: &str) -> LoadResult<Vec<u128>> {
    items
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, a)| parse_hex(a, &format!("{at}.args[{i}]")))
        .collect()
}

fn load_table(
    t: &TableIr,
    at: &str,
    loader: &Loader,
    counts: (usize, usize, usize),
) -> LoadResult<TableDef> {
    let mut keys = Vec::new();
    for (j, k) in t.keys.iter().enumerate() {
        let kat = format!("{at}.keys[{j}]");
        keys.push(KeyDef {
            kind: match_kind(&k.kind, &kat)?,
            width: width(k.w, &kat)?,
            expr: loader.expr_at(&k.expr, "expr", &kat)?,
        });
    }
    let mut actions = Vec::new();
    for (j, a) in t.actions.iter().enumerate() {
        let aat = format!("{at}.actions[{j}]");
        let scope = match a.scope.as_deref().unwrap_or("table_and_default") {
            "table_and_default" => Scope::TableAndDefault,
            "table_only" => Scope::TableOnly,
            "default_only" => Scope::DefaultOnly,
            other => return Err(format!("{aat}: unknown scope {other:?}")),
        };
        actions.push((
            index(a.action, "action", loader.actions, "action", &aat)?,
            scope,
        ));
    }
    let default = t
        .default_action
        .as_ref()
        .ok_or_else(|| format!("{at}: missing default_action"))?;
    let dat = format!("{at}.default_action");
    let mut const_entries = Vec::new();
    for (j, e) in t.const_entries.iter().enumerate() {
        let eat = format!("{at}.const_entries[{j}]");
        let action = e
            .action
            .as_ref()
            .ok_or_else(|| format!("{eat}: missing action"))?;
        const_entries.push(ConstEntry {
            priority: e.priority as i32,
            matches: e.matches.clone(),
            action: index(action.action, "action", loader.actions, "action", &eat)?,
            args: args(&action.args, &eat)?,
            is_const: e.is_const,
        });
    }
    // Direct counters count in the table entries themselves; only the reference is checked.
    optional_index(
        t.direct_counter,
        "direct_counter",
        counts.0,
        "direct counter",
        at,
    )?;
    let mut selector_keys = Vec::new();
    for (j, k) in t.selector_keys.iter().enumerate() {
        let kat = format!("{at}.selector_keys[{j}]");
        selector_keys.push((loader.expr_at(&k.expr, "expr", &kat)?, width(k.w, &kat)?));
    }
    Ok(TableDef {
        id: t.id as u32,
        name: t.name.clone(),
        size: t.size.unwrap_or(1024).clamp(1, 1 << 24) as usize,
        keys,
        actions,
        default_action: index(default.action, "action", loader.actions, "action", &dat)?,
        default_args: args(&default.args, &dat)?,
        default_const: default.is_const,
        const_entries,
        is_const: t.is_const,
        direct_meter: optional_index(t.direct_meter, "direct_meter", counts.1, "direct meter", at)?,
        support_timeout: t.support_timeout,
        implementation: optional_index(
            t.implementation,
            "implementation",
            counts.2,
            "action profile",
            at,
        )?,
        selector_keys: Packed::new(selector_keys),
    })
}

fn match_kind(name: &str, at: &str) -> LoadResult<MatchKind> {
    MatchKind::parse(name).ok_or_else(|| format!("{at}: unknown match kind {name:?}"))
}

/// Loads the IR's `value_sets` (absent: none).
fn load_value_sets(ir: &Ir) -> LoadResult<Vec<ValueSetDef>> {
    let mut out = Vec::new();
    for (i, v) in ir.value_sets.iter().enumerate() {
        let at = format!("value_sets[{i}]");
        let mut fields = Vec::new();
        for (j, f) in v.fields.iter().enumerate() {
            let fat = format!("{at}.fields[{j}]");
            fields.push((match_kind(&f.kind, &fat)?, width(f.w, &fat)?));
        }
        if fields.is_empty() {
            return Err(format!("{at}: a value set needs at least one field"));
        }
        if v.id < 0 || v.size < 0 {
            return Err(format!("{at}: id and size must not be negative"));
        }
        out.push(ValueSetDef {
            id: v.id as u32,
            name: v.name.clone(),
            size: v.size as usize,
            fields,
        });
    }
    Ok(out)
}

fn load_profiles(ir: &Ir, loader: &Loader, tables: usize) -> LoadResult<Vec<ProfileDef>> {
    let mut out = Vec::new();
    for (i, p) in ir.action_profiles.iter().enumerate() {
        let at = format!("action_profiles[{i}]");
        let (selector, size_by) = match &p.selector {
            None => (None, SizeBy::Weights),
            Some(sel) => (
                Some((loader.algo(&sel.algo, &at)?, width(sel.output_width, &at)?)),
                size_by(sel, &at)?,
            ),
        };
        let mut users = Vec::new();
        for t in &p.tables {
            match t.as_u64() {
                Some(n) if (n as usize) < tables => users.push(n as usize),
                _ => return Err(format!("{at}: table {t} does not exist")),
            }
        }
        out.push(ProfileDef {
            id: p.id as u32,
            name: p.name.clone(),
            size: p.size.clamp(1, 1 << 24) as usize,
            max_group_size: p.max_group_size.max(0) as usize,
            selector,
            size_by,
            tables: users,
        });
    }
    Ok(out)
}

/// A selector's `size_semantics` (absent: p4c's default, sum_of_weights).
fn size_by(sel: &SelectorIr, at: &str) -> LoadResult<SizeBy> {
    match sel.size_semantics.as_deref() {
        None | Some("sum_of_weights") => Ok(SizeBy::Weights),
        Some("sum_of_members") => Ok(SizeBy::Members),
        Some(other) => Err(format!(
            "{at}.selector.size_semantics {other:?} is neither sum_of_weights nor sum_of_members"
        )),
    }
}

fn load_parser(
    ir: &Ir,
    loader: &Loader,
    value_sets: &[ValueSetDef],
) -> LoadResult<(i64, Vec<ParserState>)> {
    let p = ir.parser.as_ref().ok_or("ir: missing parser")?;
    let n = p.states.len() as i64;
    let target = |t: i64, at: &str| -> LoadResult<i64> {
        if t == -1 || t == -2 || (0..n).contains(&t) {
            Ok(t)
        } else {
            Err(format!("{at}: state target {t} is not a state, -1 or -2"))
        }
    };
    let start = target(p.start, "parser.start")?;
    let mut states = Vec::new();
    for (i, s) in p.states.iter().enumerate() {
        let name = s.name.as_deref().unwrap_or("?");
        let at = format!("parser.states[{i}] ({name})");
        let body = loader.block(&s.body, "body", &at)?;
        let tr = s
            .transition
            .as_ref()
            .ok_or_else(|| format!("{at}: missing transition"))?;
        let tat = format!("{at}.transition");
        let transition = match tr {
            TransitionIr::Goto { next } => Transition::Goto(target(*next, &tat)?),
            TransitionIr::Select { keys, cases: items } => {
                let keys = loader.exprs(keys, "keys", &tat)?;
                let mut cases = Vec::new();
                for (j, c) in items.iter().enumerate() {
                    let cat = format!("{tat}.cases[{j}]");
                    let sets = c
                        .sets
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
                    cases.push((sets, target(c.next, &cat)?));
                }
                Transition::Select { keys, cases }
            }
        };
        states.push(ParserState { body, transition });
    }
    Ok((start, states))
}

fn keyset(k: &KeySetIr, value_sets: usize, at: &str) -> LoadResult<KeySet> {
    let get = |v: &Value, key: &str| parse_hex(v, &format!("{at}.{key}"));
    Ok(match k {
        KeySetIr::Exact { v } => KeySet::Exact(get(v, "v")?),
        KeySetIr::Mask { v, m } => {
            let m = get(m, "m")?;
            KeySet::Mask(get(v, "v")? & m, m)
        }
        KeySetIr::Range { lo, hi } => KeySet::Range(get(lo, "lo")?, get(hi, "hi")?),
        KeySetIr::Any => KeySet::Any,
        KeySetIr::ValueSet { set } => {
            KeySet::ValueSet(index(*set, "set", value_sets, "value set", at)?)
        }
    })
}

fn load_controller_header(
    ir: &Ir,
    key: &str,
    instances: &[Instance],
) -> LoadResult<Option<ControllerHeader>> {
    let Some(h) = ir.controller_headers.get(key) else {
        return Ok(None);
    };
    let at = format!("controller_headers.{key}");
    let inst = index(h.inst, "inst", instances.len(), "instance", &at)?;
    let mut fields = Vec::new();
    for (i, f) in h.fields.iter().enumerate() {
        let fat = format!("{at}.fields[{i}]");
        fields.push((f.id as u32, f.name.clone(), width(f.w, &fat)?));
    }
    Ok(Some(ControllerHeader { inst, fields }))
}

fn controls(ir: &Ir, loader: &Loader, name: &str) -> LoadResult<Vec<Stmt>> {
    match ir.controls.get(name) {
        None | Some(None) => Ok(Vec::new()),
        Some(Some(c)) => loader.block(&c.body, "body", &format!("controls.{name}")),
    }
}

pub fn load(ir: &Value) -> LoadResult<Program> {
    if ir.get("format").and_then(Value::as_str) != Some("dplab-p4-ir") {
        return Err("ir: \"format\" must be \"dplab-p4-ir\"".into());
    }
    if ir.get("version").and_then(Value::as_i64) != Some(1) {
        return Err("ir: only \"version\": 1 is supported".into());
    }
    let ir = crate::ir::decode(ir)?;
    let (instances, slot_count) = load_instances(&ir)?;
    let stacks = ir
        .stacks
        .iter()
        .enumerate()
        .map(|(i, s)| header_list(&s.instances, &instances, &format!("stacks[{i}]")))
        .collect::<LoadResult<Vec<Vec<usize>>>>()?;
    let loader = Loader {
        instances: &instances,
        stacks: stacks.len(),
        actions: ir.actions.len(),
        tables: ir.tables.len(),
        counters: ir.counters.len(),
        meters: ir.meters.len(),
        direct_meters: ir.direct_meters.len(),
        registers: ir.registers.len(),
        digests: ir.digests.len(),
        errors: ir.errors.len(),
    };
    let actions = load_actions(&ir, &loader)?;
    let counts = (
        ir.direct_counters.len(),
        ir.direct_meters.len(),
        ir.action_profiles.len(),
    );
    let tables = ir
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| load_table(t, &format!("tables[{i}]"), &loader, counts))
        .collect::<LoadResult<Vec<TableDef>>>()?;
    let profiles = load_profiles(&ir, &loader, tables.len())?;
    let value_sets = load_value_sets(&ir)?;
    let (parser_start, parser_states) = load_parser(&ir, &loader, &value_sets)?;
    let emit = ir.deparser.as_ref().and_then(|d| d.emit.as_ref());
    let deparser = match emit {
        Some(items) => header_list(items, &instances, "deparser.emit")?,
        None => return Err("ir: missing deparser.emit".into()),
    };
    let mut field_lists = HashMap::new();
    for (k, refs) in &ir.field_lists {
        let at = format!("field_lists.{k}");
        let n: u32 = k
            .parse()
            .map_err(|_| format!("{at}: key is not a number"))?;
        let slots = refs
            .iter()
            .map(|r| loader.slot(r.inst, r.field, &at).map(|s| s.0))
            .collect::<LoadResult<Vec<usize>>>()?;
        field_lists.insert(n, slots);
    }
    let mut digests = Vec::new();
    for (i, d) in ir.digests.iter().enumerate() {
        let at = format!("digests[{i}]");
        for f in &d.fields {
            width(f.w, &at)?;
        }
        digests.push(DigestDef {
            id: d.id as u32,
            name: d.name.clone(),
        });
    }
    load_externs(&ir.direct_counters, "direct_counters", tables.len())?;
    Ok(Program {
        name: ir.program.clone().unwrap_or_default(),
        verify_checksum: controls(&ir, &loader, "verify_checksum")?,
        ingress: controls(&ir, &loader, "ingress")?,
        egress: controls(&ir, &loader, "egress")?,
        compute_checksum: controls(&ir, &loader, "compute_checksum")?,
        counters: load_externs(&ir.counters, "counters", tables.len())?,
        meters: load_externs(&ir.meters, "meters", tables.len())?,
        direct_meters: load_externs(&ir.direct_meters, "direct_meters", tables.len())?,
        registers: load_externs(&ir.registers, "registers", tables.len())?,
        packet_in: load_controller_header(&ir, "packet_in", &instances)?,
        packet_out: load_controller_header(&ir, "packet_out", &instances)?,
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
