//! The executable form of a program's statements, lowered once at load from the checked
//! tree of `program.rs`. Why: walking that tree costs ~60 instructions per statement
//! (a big match, an expression walk even for `a = b`, a call per node). The common
//! statements of forwarding programs become ops with their field slots, masks and
//! constants resolved (field = constant / field / parameter, field = field ± constant),
//! conditions become tests without an expression walk (`isValid`, field against a
//! constant, `&&`, `||`, `!`), and constant subexpressions are folded.

use crate::program::{BinOp, Dest, Expr, Program, Stmt, SwitchCases, UnOp};
use crate::values::mask;

pub type Block = Box<[Op]>;

#[derive(Debug)]
pub enum Op {
    /// `field = constant` (a whole field; the constant already cut to its width).
    SetConst {
        slot: usize,
        value: u128,
    },
    /// `field = field` (whole fields), cut to the destination's width.
    Copy {
        dst: usize,
        src: usize,
        mask: u128,
    },
    /// `field = action parameter`, cut to the field's width.
    SetParam {
        slot: usize,
        index: usize,
        mask: u128,
    },
    /// `field = field + constant`, cut to the operation's and the destination's width. A
    /// subtraction adds the constant's two's complement (the same modulo 2^width).
    AddConst {
        dst: usize,
        src: usize,
        addend: u128,
        mask: u128,
    },
    /// Any other assignment (boxed, as the rare big variants are: a small `Op` keeps the
    /// blocks dense and the dispatch on a plain tag).
    Assign(Box<(Dest, Expr)>),
    If(Cond, Block, Block),
    Apply {
        table: usize,
        hit_dest: Option<Dest>,
        switch: Option<Box<Switch>>,
    },
    Call {
        action: usize,
        args: Box<[Expr]>,
    },
    /// A parser's `extract` of one header instance.
    Extract(usize),
    /// Every other statement, run as loaded: none of them holds a block.
    Leaf(Box<Stmt>),
}

/// `switch (t.apply().action_run)`: the case bodies by action, and the default's.
#[derive(Debug)]
pub struct Switch {
    pub cases: Vec<(Vec<usize>, Block)>,
    pub default: Option<Block>,
}

/// A condition: a test of one field or header for the common shapes, else an expression.
#[derive(Debug)]
pub enum Cond {
    Always(bool),
    Valid(usize),
    /// `field <op> constant`.
    FieldCmp {
        slot: usize,
        op: Cmp,
        value: u128,
    },
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
    Expr(Expr),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn of(op: BinOp) -> Option<Cmp> {
        Some(match op {
            BinOp::Eq => Cmp::Eq,
            BinOp::Ne => Cmp::Ne,
            BinOp::Lt => Cmp::Lt,
            BinOp::Le => Cmp::Le,
            BinOp::Gt => Cmp::Gt,
            BinOp::Ge => Cmp::Ge,
            _ => return None,
        })
    }

    /// The comparison with its operands swapped (`c < x` is `x > c`).
    fn swapped(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            same => same,
        }
    }

    #[inline]
    pub fn holds(self, x: u128, y: u128) -> bool {
        match self {
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
        }
    }
}

/// A program's lowered blocks: the controls, the parser states' bodies (by state) and
/// the actions' bodies (by action).
#[derive(Debug)]
pub struct Code {
    pub verify_checksum: Block,
    pub ingress: Block,
    pub egress: Block,
    pub compute_checksum: Block,
    pub states: Vec<Block>,
    pub actions: Vec<Block>,
}

impl Code {
    pub fn new(prog: &Program) -> Code {
        Code {
            verify_checksum: block(&prog.verify_checksum),
            ingress: block(&prog.ingress),
            egress: block(&prog.egress),
            compute_checksum: block(&prog.compute_checksum),
            states: prog.parser_states.iter().map(|s| block(&s.body)).collect(),
            actions: prog.actions.iter().map(|a| block(&a.body)).collect(),
        }
    }
}

fn block(stmts: &[Stmt]) -> Block {
    stmts.iter().map(op).collect()
}

fn op(s: &Stmt) -> Op {
    match s {
        Stmt::Assign(d, e) => assign(*d, fold(e)),
        Stmt::If(c, then, other) => Op::If(cond(&fold(c)), block(then), block(other)),
        Stmt::Apply {
            table,
            hit_dest,
            switch,
        } => Op::Apply {
            table: *table,
            hit_dest: *hit_dest,
            switch: switch.as_ref().map(|sw| Box::new(lower_switch(sw))),
        },
        Stmt::Call(action, args) => Op::Call {
            action: *action,
            args: args.iter().map(fold).collect(),
        },
        Stmt::Extract(inst) => Op::Extract(*inst),
        leaf => Op::Leaf(Box::new(leaf.clone())),
    }
}

fn lower_switch(sw: &SwitchCases) -> Switch {
    Switch {
        cases: sw
            .cases
            .iter()
            .map(|(actions, body)| (actions.clone(), block(body)))
            .collect(),
        default: sw.default.as_deref().map(block),
    }
}

/// An assignment as one of the resolved ops when it has their shape.
fn assign(d: Dest, e: Expr) -> Op {
    if d.is_slice {
        return Op::Assign(Box::new((d, e)));
    }
    match e {
        Expr::Const(v) => Op::SetConst {
            slot: d.slot,
            value: v & d.mask,
        },
        Expr::Field(src) => Op::Copy {
            dst: d.slot,
            src,
            mask: d.mask,
        },
        Expr::Param(index) => Op::SetParam {
            slot: d.slot,
            index,
            mask: d.mask,
        },
        Expr::Bin(op @ (BinOp::Add | BinOp::Sub), a, b, w) => match (*a, *b) {
            (Expr::Field(src), Expr::Const(k)) => Op::AddConst {
                dst: d.slot,
                src,
                addend: if op == BinOp::Add {
                    k
                } else {
                    k.wrapping_neg()
                },
                mask: mask(w) & d.mask,
            },
            (Expr::Const(k), Expr::Field(src)) if op == BinOp::Add => Op::AddConst {
                dst: d.slot,
                src,
                addend: k,
                mask: mask(w) & d.mask,
            },
            (a, b) => Op::Assign(Box::new((d, Expr::Bin(op, Box::new(a), Box::new(b), w)))),
        },
        other => Op::Assign(Box::new((d, other))),
    }
}

/// A condition's test; what has no shape of its own stays an expression.
fn cond(e: &Expr) -> Cond {
    match e {
        Expr::Const(v) => Cond::Always(*v != 0),
        Expr::Valid(inst) => Cond::Valid(*inst),
        Expr::Field(slot) => Cond::FieldCmp {
            slot: *slot,
            op: Cmp::Ne,
            value: 0,
        },
        Expr::Un(UnOp::LNot, a, _) => Cond::Not(Box::new(cond(a))),
        Expr::Bin(BinOp::LAnd, a, b, _) => Cond::And(Box::new(cond(a)), Box::new(cond(b))),
        Expr::Bin(BinOp::LOr, a, b, _) => Cond::Or(Box::new(cond(a)), Box::new(cond(b))),
        Expr::Bin(op, a, b, _) => match (Cmp::of(*op), &**a, &**b) {
            (Some(cmp), Expr::Field(slot), Expr::Const(value)) => Cond::FieldCmp {
                slot: *slot,
                op: cmp,
                value: *value,
            },
            (Some(cmp), Expr::Const(value), Expr::Field(slot)) => Cond::FieldCmp {
                slot: *slot,
                op: cmp.swapped(),
                value: *value,
            },
            _ => Cond::Expr(e.clone()),
        },
        _ => Cond::Expr(e.clone()),
    }
}

/// The expression with every subexpression of constants replaced by its value.
pub fn fold(e: &Expr) -> Expr {
    let folded = match e {
        Expr::Un(op, a, w) => Expr::Un(*op, Box::new(fold(a)), *w),
        Expr::Bin(op, a, b, w) => Expr::Bin(*op, Box::new(fold(a)), Box::new(fold(b)), *w),
        Expr::Cond(c, a, b) => match fold(c) {
            Expr::Const(v) => return fold(if v != 0 { a } else { b }),
            c => Expr::Cond(Box::new(c), Box::new(fold(a)), Box::new(fold(b))),
        },
        Expr::Slice(a, hi, lo) => Expr::Slice(Box::new(fold(a)), *hi, *lo),
        Expr::Concat(a, b, bw) => Expr::Concat(Box::new(fold(a)), Box::new(fold(b)), *bw),
        Expr::Cast(a, w) => Expr::Cast(Box::new(fold(a)), *w),
        leaf => return leaf.clone(),
    };
    constant(&folded).map_or(folded, Expr::Const)
}

/// The value of an operation whose operands are constants.
fn constant(e: &Expr) -> Option<u128> {
    let value = |e: &Expr| match e {
        Expr::Const(v) => Some(*v),
        _ => None,
    };
    Some(match e {
        Expr::Un(op, a, w) => unary(*op, value(a)?, *w),
        Expr::Bin(op, a, b, w) => binary(*op, value(a)?, value(b)?, *w),
        Expr::Slice(a, hi, lo) => slice(value(a)?, *hi, *lo),
        Expr::Concat(a, b, bw) => concat(value(a)?, value(b)?, *bw),
        Expr::Cast(a, w) => value(a)? & mask(*w),
        _ => return None,
    })
}

#[inline]
pub fn unary(op: UnOp, a: u128, w: u32) -> u128 {
    match op {
        UnOp::Not => !a & mask(w),
        UnOp::LNot => (a == 0) as u128,
        UnOp::Neg => a.wrapping_neg() & mask(w),
    }
}

/// `x op y` on `w`-bit values (`&&` and `||` of values already evaluated).
pub fn binary(op: BinOp, x: u128, y: u128, w: u32) -> u128 {
    let m = mask(w);
    match op {
        BinOp::Add => x.wrapping_add(y) & m,
        BinOp::Sub => x.wrapping_sub(y) & m,
        BinOp::Mul => x.wrapping_mul(y) & m,
        // BMv2 divides with boost's cpp_int, which throws on a zero divisor and ends
        // simple_switch; here a zero divisor gives 0 (docs/p4-ir.md, 4), never a crash.
        BinOp::Div => x.checked_div(y).unwrap_or(0),
        BinOp::Mod => x.checked_rem(y).unwrap_or(0),
        BinOp::AddSat => x.checked_add(y).filter(|v| *v <= m).unwrap_or(m),
        BinOp::SubSat => x.saturating_sub(y),
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::Shl if y >= w as u128 => 0,
        BinOp::Shl => (x << y) & m,
        BinOp::Shr if y >= w as u128 => 0,
        BinOp::Shr => x >> y,
        BinOp::Eq => (x == y) as u128,
        BinOp::Ne => (x != y) as u128,
        BinOp::Lt => (x < y) as u128,
        BinOp::Le => (x <= y) as u128,
        BinOp::Gt => (x > y) as u128,
        BinOp::Ge => (x >= y) as u128,
        BinOp::LAnd => (x != 0 && y != 0) as u128,
        BinOp::LOr => (x != 0 || y != 0) as u128,
    }
}

#[inline]
pub fn slice(a: u128, hi: u32, lo: u32) -> u128 {
    (a >> lo) & mask(hi - lo + 1)
}

/// `a ++ b` where `b` is `bw` bits wide.
#[inline]
pub fn concat(a: u128, b: u128, bw: u32) -> u128 {
    if bw >= 128 {
        b
    } else {
        (a << bw) | b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(slot: usize) -> Box<Expr> {
        Box::new(Expr::Field(slot))
    }

    fn k(v: u128) -> Box<Expr> {
        Box::new(Expr::Const(v))
    }

    fn whole(slot: usize, w: u32) -> Dest {
        Dest {
            slot,
            mask: mask(w),
            lo: 0,
            is_slice: false,
        }
    }

    #[test]
    fn constants_fold_and_ttl_decrement_becomes_an_add() {
        let e = Expr::Bin(BinOp::Add, k(250), Box::new(Expr::Cast(k(0x1ff), 4)), 8);
        assert!(matches!(fold(&e), Expr::Const(9)));
        let ttl = assign(whole(3, 8), Expr::Bin(BinOp::Sub, field(3), k(1), 8));
        let Op::AddConst { addend, mask, .. } = ttl else {
            panic!("{ttl:?}")
        };
        // 0 - 1 wraps to 255 in 8 bits, as the subtraction would.
        assert_eq!(0u128.wrapping_add(addend) & mask, 255);
    }

    #[test]
    fn division_and_modulo_are_unsigned_and_zero_divisors_give_zero() {
        assert_eq!(binary(BinOp::Div, 200, 7, 8), 28);
        assert_eq!(binary(BinOp::Mod, 200, 7, 8), 4);
        assert_eq!(binary(BinOp::Div, 5, 0, 8), 0);
        assert_eq!(binary(BinOp::Mod, 5, 0, 8), 0);
        let e = Expr::Bin(BinOp::Mod, k(u64::MAX as u128), k(10), 64);
        assert!(matches!(fold(&e), Expr::Const(5)));
    }

    #[test]
    fn conditions_take_their_test_shapes() {
        let c = Expr::Bin(
            BinOp::LAnd,
            Box::new(Expr::Valid(2)),
            Box::new(Expr::Bin(BinOp::Lt, k(1), field(7), 1)),
            1,
        );
        match cond(&c) {
            Cond::And(a, b) => {
                assert!(matches!(*a, Cond::Valid(2)));
                assert!(matches!(
                    *b,
                    Cond::FieldCmp {
                        slot: 7,
                        op: Cmp::Gt,
                        value: 1
                    }
                ));
            }
            other => panic!("{other:?}"),
        }
    }
}
