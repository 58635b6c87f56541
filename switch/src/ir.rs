//! The IR's JSON shape (docs/p4-ir.md), decoded with serde's derive: what keys there are,
//! which are optional, and the types of their values. Unknown keys are ignored (the IR's
//! stability rule: later versions add keys); an unknown statement `kind` or expression
//! `op` is an error. Decoding goes through `serde_path_to_error`, so a shape error names
//! where in the IR it is (`actions[3].body[0].src: ...`). What types cannot say (indices in
//! range, widths 1..128, headers that tile) is program.rs's, as it lowers these structs.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

/// Decodes `ir` into the typed IR; the error names the path to the bad value.
pub fn decode(ir: &Value) -> Result<Ir, String> {
    serde_path_to_error::deserialize(ir).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { "ir".to_string() } else { path };
        format!("{at}: {}", e.into_inner())
    })
}

#[derive(Deserialize)]
pub struct Ir {
    #[serde(default)]
    pub program: Option<String>,
    pub instances: Vec<InstanceIr>,
    #[serde(default)]
    pub stacks: Vec<StackIr>,
    #[serde(default)]
    pub errors: Vec<IgnoredAny>,
    #[serde(default)]
    pub field_lists: BTreeMap<String, Vec<FieldRef>>,
    pub parser: Option<ParserIr>,
    #[serde(default)]
    pub controls: BTreeMap<String, Option<ControlIr>>,
    pub deparser: Option<DeparserIr>,
    pub actions: Vec<ActionIr>,
    pub tables: Vec<TableIr>,
    #[serde(default)]
    pub counters: Vec<ExternIr>,
    #[serde(default)]
    pub direct_counters: Vec<ExternIr>,
    #[serde(default)]
    pub meters: Vec<ExternIr>,
    #[serde(default)]
    pub direct_meters: Vec<ExternIr>,
    #[serde(default)]
    pub registers: Vec<ExternIr>,
    #[serde(default)]
    pub digests: Vec<DigestIr>,
    #[serde(default)]
    pub controller_headers: BTreeMap<String, ControllerHeaderIr>,
    #[serde(default)]
    pub value_sets: Vec<ValueSetIr>,
    #[serde(default)]
    pub action_profiles: Vec<ProfileIr>,
}

#[derive(Deserialize)]
pub struct InstanceIr {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub bits: i64,
    pub fields: Vec<FieldIr>,
}

#[derive(Deserialize)]
pub struct FieldIr {
    pub w: i64,
    #[serde(default)]
    pub offset: i64,
}

#[derive(Deserialize)]
pub struct StackIr {
    pub instances: Vec<Value>,
}

/// A field of an instance: `{"inst": i, "field": j}`.
#[derive(Deserialize)]
pub struct FieldRef {
    pub inst: i64,
    pub field: i64,
}

/// An assignment target: a field, or a slice `[hi:lo]` of one.
#[derive(Deserialize)]
pub struct DestIr {
    pub inst: i64,
    pub field: i64,
    pub hi: Option<u64>,
    pub lo: Option<u64>,
}

/// An expression (docs/p4-ir.md, 5): every node has its width `w`.
#[derive(Deserialize)]
pub struct ExprIr {
    pub w: i64,
    #[serde(flatten)]
    pub node: ExprNode,
}

type Operand = Box<ExprIr>;

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum ExprNode {
    Const { v: Value },
    Field { inst: i64, field: i64 },
    Valid { inst: i64 },
    Param { index: i64 },
    Lookahead,
    Remaining,
    Not { a: Operand },
    LNot { a: Operand },
    Neg { a: Operand },
    Add { a: Operand, b: Operand },
    Sub { a: Operand, b: Operand },
    Mul { a: Operand, b: Operand },
    Div { a: Operand, b: Operand },
    Mod { a: Operand, b: Operand },
    AddSat { a: Operand, b: Operand },
    SubSat { a: Operand, b: Operand },
    And { a: Operand, b: Operand },
    Or { a: Operand, b: Operand },
    Xor { a: Operand, b: Operand },
    Shl { a: Operand, b: Operand },
    Shr { a: Operand, b: Operand },
    Eq { a: Operand, b: Operand },
    Ne { a: Operand, b: Operand },
    Lt { a: Operand, b: Operand },
    Le { a: Operand, b: Operand },
    Gt { a: Operand, b: Operand },
    Ge { a: Operand, b: Operand },
    LAnd { a: Operand, b: Operand },
    LOr { a: Operand, b: Operand },
    Cond { c: Operand, a: Operand, b: Operand },
    Slice { a: Operand, hi: i64, lo: i64 },
    Concat { a: Operand, b: Operand },
    Cast { a: Operand },
}

/// A field list reference (clone, resubmit, recirculate): a number, or one in a string.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum FieldListRef {
    Number(u64),
    Text(String),
}

/// A statement (docs/p4-ir.md, 6).
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StmtIr {
    Assign {
        dst: DestIr,
        src: ExprIr,
    },
    CopyHeader {
        dst: i64,
        src: i64,
    },
    SetValid {
        inst: i64,
    },
    SetInvalid {
        inst: i64,
    },
    If {
        cond: ExprIr,
        #[serde(default)]
        then: Option<Vec<StmtIr>>,
        #[serde(default, rename = "else")]
        otherwise: Option<Vec<StmtIr>>,
    },
    Apply {
        table: i64,
        #[serde(default)]
        hit_dest: Option<DestIr>,
        #[serde(default)]
        switch: Option<SwitchIr>,
    },
    Call {
        action: i64,
        args: Vec<ExprIr>,
    },
    Exit,
    Return,
    StackPush {
        stack: i64,
        count: i64,
    },
    StackPop {
        stack: i64,
        count: i64,
    },
    CounterCount {
        counter: i64,
        index: ExprIr,
    },
    MeterExecute {
        meter: i64,
        index: ExprIr,
        dst: DestIr,
    },
    DirectMeterRead {
        meter: i64,
        dst: DestIr,
    },
    RegisterRead {
        register: i64,
        index: ExprIr,
        dst: DestIr,
    },
    RegisterWrite {
        register: i64,
        index: ExprIr,
        value: ExprIr,
    },
    Hash {
        dst: DestIr,
        algo: String,
        base: ExprIr,
        data: Vec<ExprIr>,
        max: ExprIr,
    },
    Random {
        dst: DestIr,
        lo: ExprIr,
        hi: ExprIr,
    },
    Clone {
        #[serde(rename = "type")]
        kind: String,
        session: ExprIr,
        #[serde(default)]
        field_list: Option<FieldListRef>,
    },
    Resubmit {
        #[serde(default)]
        field_list: Option<FieldListRef>,
    },
    Recirculate {
        #[serde(default)]
        field_list: Option<FieldListRef>,
    },
    Digest {
        digest: i64,
        data: Vec<ExprIr>,
    },
    VerifyChecksum {
        cond: ExprIr,
        data: Vec<ExprIr>,
        checksum: ExprIr,
        algo: String,
    },
    UpdateChecksum {
        cond: ExprIr,
        data: Vec<ExprIr>,
        dst: DestIr,
        algo: String,
    },
    Log,
    Extract {
        #[serde(default)]
        inst: Option<i64>,
        #[serde(default)]
        stack: Option<i64>,
    },
    Advance {
        bits: ExprIr,
    },
    Verify {
        error: i64,
        cond: ExprIr,
    },
}

#[derive(Deserialize)]
pub struct SwitchIr {
    pub cases: Vec<SwitchCaseIr>,
    #[serde(default)]
    pub default: Option<Vec<StmtIr>>,
}

#[derive(Deserialize)]
pub struct SwitchCaseIr {
    pub actions: Vec<Value>,
    #[serde(default)]
    pub body: Option<Vec<StmtIr>>,
}

#[derive(Deserialize)]
pub struct ControlIr {
    #[serde(default)]
    pub body: Option<Vec<StmtIr>>,
}

#[derive(Deserialize)]
pub struct DeparserIr {
    pub emit: Option<Vec<Value>>,
}

#[derive(Deserialize)]
pub struct ActionIr {
    pub id: i64,
    pub name: String,
    pub params: Vec<ParamIr>,
    #[serde(default)]
    pub body: Option<Vec<StmtIr>>,
}

#[derive(Deserialize)]
pub struct ParamIr {
    pub id: i64,
    pub w: i64,
}

#[derive(Deserialize)]
pub struct TableIr {
    pub id: i64,
    pub name: String,
    #[serde(default)]
    pub size: Option<i64>,
    pub keys: Vec<KeyIr>,
    pub actions: Vec<TableActionIr>,
    pub default_action: Option<ActionRefIr>,
    #[serde(default)]
    pub const_entries: Vec<ConstEntryIr>,
    #[serde(default)]
    pub is_const: bool,
    #[serde(default)]
    pub support_timeout: bool,
    #[serde(default)]
    pub direct_counter: Option<i64>,
    #[serde(default)]
    pub direct_meter: Option<i64>,
    #[serde(default)]
    pub implementation: Option<i64>,
    #[serde(default)]
    pub selector_keys: Vec<SelectorKeyIr>,
}

#[derive(Deserialize)]
pub struct KeyIr {
    #[serde(rename = "match")]
    pub kind: String,
    pub w: i64,
    pub expr: ExprIr,
}

#[derive(Deserialize)]
pub struct SelectorKeyIr {
    pub w: i64,
    pub expr: ExprIr,
}

#[derive(Deserialize)]
pub struct TableActionIr {
    pub action: i64,
    #[serde(default)]
    pub scope: Option<String>,
}

/// An action with its arguments: a table's default action, or a const entry's.
#[derive(Deserialize)]
pub struct ActionRefIr {
    pub action: i64,
    #[serde(default)]
    pub args: Option<Vec<Value>>,
    #[serde(default, rename = "const")]
    pub is_const: bool,
}

#[derive(Deserialize)]
pub struct ConstEntryIr {
    #[serde(default)]
    pub priority: i64,
    pub matches: Vec<Value>,
    pub action: Option<ActionRefIr>,
    #[serde(default, rename = "const")]
    pub is_const: bool,
}

/// A counter, meter or register array (direct ones name their `table`).
#[derive(Deserialize)]
pub struct ExternIr {
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub unit: Option<String>,
    #[serde(default)]
    pub w: Option<i64>,
    #[serde(default)]
    pub table: Option<i64>,
}

#[derive(Deserialize)]
pub struct DigestIr {
    pub id: i64,
    pub name: String,
    pub fields: Vec<WidthIr>,
}

#[derive(Deserialize)]
pub struct WidthIr {
    pub w: i64,
}

#[derive(Deserialize)]
pub struct ControllerHeaderIr {
    pub inst: i64,
    pub fields: Vec<ControllerFieldIr>,
}

#[derive(Deserialize)]
pub struct ControllerFieldIr {
    pub id: i64,
    pub name: String,
    pub w: i64,
}

#[derive(Deserialize)]
pub struct ValueSetIr {
    pub id: i64,
    #[serde(default)]
    pub name: String,
    pub size: i64,
    pub fields: Vec<ValueSetFieldIr>,
}

#[derive(Deserialize)]
pub struct ValueSetFieldIr {
    #[serde(rename = "match")]
    pub kind: String,
    pub w: i64,
}

#[derive(Deserialize)]
pub struct ProfileIr {
    pub id: i64,
    pub name: String,
    pub size: i64,
    #[serde(default)]
    pub max_group_size: i64,
    #[serde(default)]
    pub selector: Option<SelectorIr>,
    pub tables: Vec<Value>,
}

#[derive(Deserialize)]
pub struct SelectorIr {
    pub algo: String,
    pub output_width: i64,
    #[serde(default)]
    pub size_semantics: Option<String>,
}

#[derive(Deserialize)]
pub struct ParserIr {
    pub start: i64,
    pub states: Vec<StateIr>,
}

#[derive(Deserialize)]
pub struct StateIr {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub body: Option<Vec<StmtIr>>,
    pub transition: Option<TransitionIr>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TransitionIr {
    Goto {
        next: i64,
    },
    Select {
        keys: Vec<ExprIr>,
        cases: Vec<SelectCaseIr>,
    },
}

#[derive(Deserialize)]
pub struct SelectCaseIr {
    pub sets: Vec<KeySetIr>,
    pub next: i64,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KeySetIr {
    Exact { v: Value },
    Mask { v: Value, m: Value },
    Range { lo: Value, hi: Value },
    Any,
    ValueSet { set: i64 },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A shape error names where it is and what is wrong.
    #[test]
    fn shape_errors_name_their_path() {
        let ir = |body: serde_json::Value| {
            json!({"instances": [], "actions": [{"id": 1, "name": "a", "params": [],
                   "body": body}], "tables": []})
        };
        let err = |v| super::decode(&v).err().unwrap();
        let unknown = err(ir(json!([{"kind": "nope"}])));
        assert!(
            unknown.starts_with("actions[0].body[0].kind: unknown variant `nope`"),
            "{unknown}"
        );
        let missing = err(ir(
            json!([{"kind": "assign", "dst": {"inst": 0, "field": 0}}]),
        ));
        assert!(
            missing.starts_with("actions[0].body[0]") && missing.contains("missing field `src`"),
            "{missing}"
        );
        let bad_op = err(ir(
            json!([{"kind": "assign", "dst": {"inst": 0, "field": 0},
                                      "src": {"op": "pow", "w": 8}}]),
        ));
        assert!(bad_op.contains("unknown variant `pow`"), "{bad_op}");
        assert!(err(json!({"actions": []})).contains("missing field `instances`"));
    }
}
