//! Go test files on a syntax tree (`gosyn`): each `func TestXxx(t
//! *testing.T)` (and `Benchmark`, `Fuzz`, and a testify suite's `func (s
//! *S) TestXxx()`) is a unit named by the function (`S.TestXxx` for a
//! suite method); every other function of the file is a helper.
//!
//! Go has no assertion statement: a test fails through `t.Error`,
//! `t.Errorf`, `t.Fatal`, `t.Fatalf`, `t.Fail`, `t.FailNow`, and what such
//! a call asserts is the condition of the `if` around it:
//!
//! - exact: `if got != want`, `if !reflect.DeepEqual(…)`, `if diff :=
//!   cmp.Diff(…); diff != ""`, `if err == nil` (an expected error), a bare
//!   `t.Fatal` (an explicit failure); testify's `Equal`, `EqualValues`,
//!   `Exactly`, `JSONEq`, `ErrorIs`, `ErrorAs`, `EqualError`, `Panics*`,
//!   `Fail`;
//! - comparison: `<`, `>`, `strings.Contains`, testify's `NotEqual`,
//!   `Contains`, `Greater`…, `IsType`, `Len`, `ErrorContains`;
//! - truthiness: `if !ok`, `if err != nil`, `len(x) == 0`, testify's
//!   `True`, `NoError`, `NotNil`, `NotEmpty`…;
//! - a constant: `if false`, `if true` (a test that always fails is an
//!   explicit failure, `if false` never runs).
//!
//! After `return`, `t.Skip…` or `os.Exit` the rest of a block is dead, and
//! so is a function literal bound to a name the test never uses again.
//! Subtests (`t.Run(name, func(t *testing.T) {…})`) count for their test.

use crate::units::{Assertion, Kind, Lines, Parsed, Unit, snippet, used};
use gosyn::ast::{BlockStmt, Call, Declaration, Expression, FuncDecl, IfStmt, Statement};
use gosyn::token::Operator;

/// Parses `src` into its test units.
pub fn parse(src: &str) -> Result<Parsed, String> {
    let file = gosyn::parse_source(src).map_err(|e| format!("{e}"))?;
    let w = Walker {
        src,
        lines: Lines::new(src),
        bytes: src
            .char_indices()
            .map(|(i, _)| i)
            .chain([src.len()])
            .collect(),
        params: Default::default(),
        asserters: Default::default(),
        locals: Default::default(),
    };
    let mut units = Vec::new();
    for decl in &file.decl {
        if let Declaration::Function(f) = decl {
            w.function(f, &mut units);
        }
    }
    crate::units::resolve_helpers(&mut units);
    Ok(Parsed { units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
    /// Byte offset of each character (gosyn counts characters).
    bytes: Vec<usize>,
    /// The names of the function's `*testing.T`/`B`/`F`/`TB` parameters
    /// (its subtests' too): only a failure called on one fails the test.
    params: std::cell::RefCell<Vec<String>>,
    /// Names bound to `assert.New(t)`/`require.New(t)`.
    asserters: std::cell::RefCell<Vec<String>>,
    /// Names the function binds itself (`check := func…`): a call to one
    /// is not a call to the file's helper of that name.
    locals: std::cell::RefCell<Vec<String>>,
}

/// Whether a parameter's type is the testing package's `*T`, `*B`, `*F`
/// or `TB`.
fn testing_type(t: &Expression) -> bool {
    let t = match t {
        Expression::Star(s) => &*s.right,
        Expression::TypePointer(p) => &*p.typ,
        other => other,
    };
    matches!(
        dotted(t).as_deref(),
        Some("testing.T" | "testing.B" | "testing.F" | "testing.TB")
    )
}

fn testing_params(list: &gosyn::ast::FieldList) -> Vec<String> {
    list.list
        .iter()
        .filter(|f| testing_type(&f.typ))
        .flat_map(|f| f.name.iter().map(|n| n.name.clone()))
        .collect()
}

/// `TestXxx`, `BenchmarkXxx`, `FuzzXxx`: the prefix, then not a lower-case
/// letter (`Testify` is not a test).
fn test_name(name: &str) -> bool {
    ["Test", "Benchmark", "Fuzz"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_lowercase()))
    })
}

/// The receiver's type name of a method (`(s *Suite)` → `Suite`).
fn receiver(f: &FuncDecl) -> Option<String> {
    let field = f.recv.as_ref()?.list.first()?;
    let mut t = &field.typ;
    loop {
        match t {
            Expression::Star(s) => t = &s.right,
            Expression::TypePointer(p) => t = &p.typ,
            Expression::Ident(i) => return Some(i.name.clone()),
            Expression::Index(i) => t = &i.left,
            Expression::IndexList(i) => t = &i.left,
            _ => return None,
        }
    }
}

/// `a.b.c` of a selector chain or an identifier.
fn dotted(e: &Expression) -> Option<String> {
    match e {
        Expression::Ident(i) => Some(i.name.clone()),
        Expression::Selector(s) => Some(format!("{}.{}", dotted(&s.x)?, s.sel.name)),
        Expression::Call(c) => Some(format!("{}()", dotted(&c.func)?)),
        Expression::Paren(p) => dotted(&p.expr),
        _ => None,
    }
}

/// The method or function a call names, last segment.
fn last(call: &Call) -> Option<String> {
    match &*call.func {
        Expression::Selector(s) => Some(s.sel.name.clone()),
        Expression::Ident(i) => Some(i.name.clone()),
        Expression::IndexList(l) => match &*l.left {
            Expression::Ident(i) => Some(i.name.clone()),
            _ => None,
        },
        Expression::Index(l) => match &*l.left {
            Expression::Ident(i) => Some(i.name.clone()),
            _ => None,
        },
        _ => None,
    }
}

const FAILS: &[&str] = &["Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"];
const SKIPS: &[&str] = &["Skip", "Skipf", "SkipNow"];

/// A testify assertion (`assert.Equal(t, …)`, `require.NoError(t, err)`,
/// a suite's `s.Equal(…)` or `s.Require().Equal(…)`): its kind.
fn testify(call: &Call, asserters: &[String]) -> Option<Kind> {
    let Expression::Selector(s) = &*call.func else {
        return None;
    };
    let recv = dotted(&s.x)?;
    let known = matches!(recv.as_str(), "assert" | "require" | "s" | "suite")
        || asserters.contains(&recv)
        || recv.ends_with(".Require()")
        || recv.ends_with(".Assert()");
    if !known {
        return None;
    }
    let m = s.sel.name.trim_end_matches('f');
    // `assert.True(t, true)`: a literal asserts nothing.
    if matches!(m, "True" | "False")
        && call
            .args
            .iter()
            .any(|a| matches!(a, Expression::Ident(i) if i.name == "true" || i.name == "false"))
    {
        return Some(Kind::Constant);
    }
    Some(match m {
        "Equal" | "EqualValues" | "Exactly" | "JSONEq" | "YAMLEq" | "ErrorIs" | "ErrorAs"
        | "EqualError" | "Panics" | "PanicsWithValue" | "PanicsWithError" | "Fail" | "FailNow"
        | "Same" | "InDelta" | "InEpsilon" | "WithinDuration" => Kind::Equality,
        "NotEqual" | "NotEqualValues" | "Greater" | "GreaterOrEqual" | "Less" | "LessOrEqual"
        | "Positive" | "Negative" | "NotSame" | "NotErrorIs" | "NotRegexp" | "NotPanics"
        | "Regexp" => Kind::Comparison,
        "Contains" | "NotContains" | "Subset" | "NotSubset" | "ElementsMatch" | "ErrorContains"
        | "Len" => Kind::Containment,
        "IsType" | "Implements" => Kind::Type,
        "True" | "False" | "Condition" | "Eventually" | "Never" => Kind::Truthiness,
        "NoError" | "Error" | "NotNil" | "Nil" | "Zero" | "NotZero" => Kind::Defined,
        "Empty" | "NotEmpty" => Kind::Length,
        _ => return None,
    })
}

impl Walker<'_> {
    fn byte(&self, ch: usize) -> usize {
        self.bytes.get(ch).copied().unwrap_or(self.src.len())
    }

    fn text(&self, from: usize, to: usize) -> (String, u32) {
        let (s, e) = (self.byte(from), self.byte(to));
        (snippet(self.src, s, e), self.lines.line(s))
    }

    fn call_text(&self, c: &Call) -> (String, u32) {
        self.text(c.func.pos(), c.pos.1 + 1)
    }

    fn function(&self, f: &FuncDecl, out: &mut Vec<Unit>) {
        let recv = receiver(f);
        let is_test = test_name(&f.name.name)
            && match &recv {
                // A suite's method takes no parameters.
                Some(_) => f.typ.params.list.is_empty(),
                None => f.typ.params.list.len() == 1,
            };
        let id = match &recv {
            Some(r) => format!("{r}.{}", f.name.name),
            None => f.name.name.clone(),
        };
        let (_, line) = self.text(f.name.pos, f.name.pos);
        let mut unit = Unit {
            id,
            is_test,
            line,
            asserts: Vec::new(),
            risks: Vec::new(),
        };
        *self.params.borrow_mut() = testing_params(&f.typ.params);
        self.asserters.borrow_mut().clear();
        self.locals.borrow_mut().clear();
        if let Some(body) = &f.body {
            // Comments and strings blanked: a name in a comment is no use.
            let text = {
                let (s, e) = (self.byte(body.pos.0), self.byte(body.pos.1 + 1));
                crate::count::strip(
                    crate::count::Lang::Go,
                    self.src.get(s..e).unwrap_or_default(),
                )
            };
            self.block(body, &None, None, &text, &mut unit.asserts);
        }
        let locals = self.locals.borrow();
        for a in unit.asserts.iter_mut() {
            if a.callee.as_ref().is_some_and(|c| locals.contains(c)) {
                a.callee = None;
            }
        }
        out.retain(|u| u.id != unit.id);
        out.push(unit);
    }

    /// A block's statements in order; after `return`, `t.Skip…` or
    /// `os.Exit` the rest is dead. `cond` is the innermost `if` condition
    /// around it, with its text: what a `t.Error` asserts.
    fn block(
        &self,
        b: &BlockStmt,
        dead: &Option<String>,
        cond: Option<(Kind, &str)>,
        body: &str,
        out: &mut Vec<Assertion>,
    ) {
        self.stmts(&b.list, dead, cond, body, out);
    }

    fn stmts(
        &self,
        list: &[Statement],
        dead: &Option<String>,
        cond: Option<(Kind, &str)>,
        body: &str,
        out: &mut Vec<Assertion>,
    ) {
        let mut dead = dead.clone();
        for s in list {
            self.stmt(s, &dead, cond, body, out);
            if dead.is_none()
                && let Some((why, at)) = terminator(s)
            {
                let (_, line) = self.text(at, at);
                dead = Some(format!("it comes after {why} on line {line}"));
            }
        }
    }

    fn stmt(
        &self,
        s: &Statement,
        dead: &Option<String>,
        cond: Option<(Kind, &str)>,
        body: &str,
        out: &mut Vec<Assertion>,
    ) {
        match s {
            Statement::Expr(e) => self.expr(&e.expr, dead, cond, body, out),
            Statement::If(i) => self.if_stmt(i, dead, body, out),
            Statement::Block(b) => self.block(b, dead, cond, body, out),
            Statement::For(f) => {
                let never = matches!(f.cond.as_deref(), Some(Statement::Expr(e)) if matches!(&e.expr, Expression::Ident(i) if i.name == "false"));
                let inner = dead.clone().or_else(|| {
                    never.then(|| "it is under `for false`, which never runs".to_string())
                });
                self.block(&f.body, &inner, cond, body, out)
            }
            Statement::Range(r) => self.block(&r.body, dead, cond, body, out),
            Statement::Label(l) => self.stmt(&l.stmt, dead, cond, body, out),
            Statement::Defer(d) => self.call(&d.call, dead, cond, body, out),
            Statement::Go(g) => {
                let inner = dead.clone().or_else(|| {
                    Some("it runs in a goroutine, which may end after the test".to_string())
                });
                self.call(&g.call, &inner, cond, body, out)
            }
            Statement::Switch(sw) => {
                for clause in &sw.block.body {
                    let never = !clause.list.is_empty()
                        && clause
                            .list
                            .iter()
                            .all(|e| matches!(e, Expression::Ident(i) if i.name == "false"));
                    let inner = dead.clone().or_else(|| {
                        never.then(|| "it is under `case false`, which never runs".to_string())
                    });
                    self.stmts(&clause.body, &inner, cond, body, out);
                }
            }
            Statement::TypeSwitch(sw) => {
                for clause in &sw.block.body {
                    self.stmts(&clause.body, dead, cond, body, out);
                }
            }
            Statement::Select(sel) => {
                for clause in &sel.body.body {
                    self.stmts(&clause.body, dead, cond, body, out);
                }
            }
            Statement::Assign(a) => {
                for (k, r) in a.right.iter().enumerate() {
                    if let Some(Expression::Ident(name)) = a.left.get(k) {
                        self.locals.borrow_mut().push(name.name.clone());
                        if let Expression::Call(c) = r
                            && matches!(
                                dotted(&c.func).as_deref(),
                                Some("assert.New" | "require.New")
                            )
                        {
                            self.asserters.borrow_mut().push(name.name.clone());
                        }
                    }
                    // `check := func() { t.Error… }` runs only if used.
                    if let Expression::FuncLit(f) = r {
                        let name = match a.left.get(k) {
                            Some(Expression::Ident(i)) => Some(i.name.as_str()),
                            _ => None,
                        };
                        let inner = dead.clone().or_else(|| {
                            (!name.is_some_and(|n| n != "_" && used(body, n))).then(|| {
                                "it is inside a function literal that is never called".to_string()
                            })
                        });
                        self.block(&f.body, &inner, cond, body, out);
                    } else {
                        self.expr(r, dead, cond, body, out);
                    }
                }
            }
            Statement::Return(r) => {
                for e in &r.ret {
                    self.expr(e, dead, cond, body, out);
                }
            }
            _ => {}
        }
    }

    fn if_stmt(&self, i: &IfStmt, dead: &Option<String>, body: &str, out: &mut Vec<Assertion>) {
        let kind = condition_kind(&i.cond);
        let (text, _) = self.text(i.pos, i.body.pos.0);
        // `if !assert.NoError(t, err) { return }`: a call in the condition.
        self.expr(&i.cond, dead, None, body, out);
        let never = matches!(&i.cond, Expression::Ident(x) if x.name == "false");
        let inner = dead
            .clone()
            .or_else(|| never.then(|| "it is under `if false`, which never runs".to_string()));
        self.block(&i.body, &inner, Some((kind, &text)), body, out);
        if let Some(e) = &i.else_ {
            // The else branch asserts the opposite: as strong.
            match &**e {
                Statement::Block(b) => self.block(b, dead, Some((kind, &text)), body, out),
                other => self.stmt(other, dead, None, body, out),
            }
        }
    }

    fn call(
        &self,
        c: &Call,
        dead: &Option<String>,
        cond: Option<(Kind, &str)>,
        body: &str,
        out: &mut Vec<Assertion>,
    ) {
        let name = last(c).unwrap_or_default();
        // Only the test's own `t` (or a subtest's, or a suite's `s.T()`).
        let on_t = matches!(&*c.func, Expression::Selector(s)
            if dotted(&s.x).is_some_and(|r| self.params.borrow().contains(&r) || r.ends_with(".T()")));
        let testified = testify(c, &self.asserters.borrow());
        if let Some(kind) = testified {
            let (text, line) = self.call_text(c);
            out.push(Assertion {
                text,
                line,
                kind,
                dead: dead.clone(),
                callee: None,
                plain: false,
            });
        } else if on_t && FAILS.contains(&name.as_str()) {
            let (call, line) = self.call_text(c);
            let (kind, text) = match cond {
                Some((k, t)) => (k, format!("{t} {{ {call} }}")),
                None => (Kind::Fail, call),
            };
            out.push(Assertion {
                text,
                line,
                kind,
                dead: dead.clone(),
                callee: None,
                plain: false,
            });
        } else if let Expression::Ident(i) = &*c.func {
            // A call to a function the file may define (`checkSum(t, …)`):
            // an assertion of its strength when it has any.
            let (text, line) = self.call_text(c);
            out.push(Assertion {
                text,
                line,
                kind: Kind::Constant,
                dead: dead.clone(),
                callee: Some(i.name.clone()),
                plain: true,
            });
        }
        for arg in &c.args {
            self.expr(arg, dead, cond, body, out);
        }
        if let Expression::Selector(s) = &*c.func {
            self.expr(&s.x, dead, cond, body, out);
        }
    }

    fn expr(
        &self,
        e: &Expression,
        dead: &Option<String>,
        cond: Option<(Kind, &str)>,
        body: &str,
        out: &mut Vec<Assertion>,
    ) {
        match e {
            Expression::Call(c) => self.call(c, dead, cond, body, out),
            // A function literal passed to a call runs (`t.Run(…, func…)`)
            // or is called in place.
            Expression::FuncLit(f) => {
                self.params
                    .borrow_mut()
                    .extend(testing_params(&f.typ.params));
                self.block(&f.body, dead, None, body, out)
            }
            Expression::Paren(p) => self.expr(&p.expr, dead, cond, body, out),
            Expression::Operation(op) => {
                self.expr(&op.x, dead, cond, body, out);
                if let Some(y) = &op.y {
                    self.expr(y, dead, cond, body, out);
                }
            }
            _ => {}
        }
    }
}

/// A statement that always ends its block, and where.
fn terminator(s: &Statement) -> Option<(&'static str, usize)> {
    match s {
        Statement::Return(r) => Some(("`return`", r.pos)),
        Statement::Expr(e) => match &e.expr {
            Expression::Call(c) => {
                let name = last(c)?;
                let target = dotted(&c.func)?;
                if SKIPS.contains(&name.as_str()) && target.contains('.') {
                    Some(("a skip", c.func.pos()))
                } else if target == "os.Exit" || name == "Goexit" {
                    Some(("an exit", c.func.pos()))
                } else {
                    None
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// Two operands written alike (`got != got`): the same name or selector.
fn same(a: &Expression, b: &Expression) -> bool {
    dotted(a).is_some() && dotted(a) == dotted(b)
}

/// What an `if` condition checks, for the `t.Error` under it.
fn condition_kind(cond: &Expression) -> Kind {
    match cond {
        Expression::Ident(i) if i.name == "true" || i.name == "false" => Kind::Constant,
        Expression::Paren(p) => condition_kind(&p.expr),
        Expression::Operation(op) => {
            let nil = |e: &Expression| matches!(e, Expression::Ident(i) if i.name == "nil");
            let len = |e: &Expression| matches!(e, Expression::Call(c) if matches!(&*c.func, Expression::Ident(i) if i.name == "len"));
            match (&op.op, &op.y) {
                (Operator::Not, None) => match &*op.x {
                    Expression::Call(c) => match last(c).unwrap_or_default().as_str() {
                        n if n.contains("Equal") => Kind::Equality,
                        n if n.contains("Contains")
                            || n.contains("Prefix")
                            || n.contains("Suffix") =>
                        {
                            Kind::Containment
                        }
                        "Is" | "As" => Kind::Equality,
                        _ => Kind::Truthiness,
                    },
                    _ => Kind::Truthiness,
                },
                (Operator::Equal | Operator::NotEqual, Some(y)) if same(&op.x, y) => Kind::Constant,
                // `if err == nil { t.Fatal("want an error") }`: that there
                // is one, not which.
                (Operator::Equal, Some(y)) if nil(y) || nil(&op.x) => Kind::Defined,
                (Operator::NotEqual, Some(y)) if nil(y) || nil(&op.x) => Kind::Defined,
                (
                    Operator::Equal | Operator::NotEqual | Operator::Greater | Operator::Less,
                    Some(_),
                ) if len(&op.x) => Kind::Length,
                (Operator::Equal | Operator::NotEqual, Some(_)) => Kind::Equality,
                (
                    Operator::Less
                    | Operator::Greater
                    | Operator::LessEqual
                    | Operator::GreaterEqual,
                    Some(_),
                ) => Kind::Comparison,
                // `a || b` fails when either does: as strong as the
                // stronger; `a && b` only when both do: the weaker.
                (Operator::OrOr, Some(y)) => {
                    let (a, b) = (condition_kind(&op.x), condition_kind(y));
                    if a.tier() >= b.tier() { a } else { b }
                }
                (Operator::AndAnd, Some(y)) => {
                    let (a, b) = (condition_kind(&op.x), condition_kind(y));
                    if a.tier() <= b.tier() { a } else { b }
                }
                _ => Kind::Truthiness,
            }
        }
        _ => Kind::Truthiness,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(before: &str, after: &str) -> Vec<String> {
        crate::units::findings_of(parse, before, after)
    }

    const BASE: &str = r#"package calc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func checkSum(t *testing.T, got int) {
	if got != 3 {
		t.Errorf("got %d", got)
	}
}

func TestAdd(t *testing.T) {
	got := Add(1, 2)
	if got != 3 {
		t.Errorf("Add(1, 2) = %d, want 3", got)
	}
}

func TestSub(t *testing.T) {
	assert.Equal(t, 1, Sub(2, 1))
}

func TestHelper(t *testing.T) {
	checkSum(t, Add(1, 2))
}

func TestSubtests(t *testing.T) {
	t.Run("one", func(t *testing.T) {
		if Add(0, 1) != 1 {
			t.Fatal("zero")
		}
	})
}

type S struct{}

func (s *S) TestInSuite() {
	s.Equal(2, Add(1, 1))
}
"#;

    #[test]
    fn an_unchanged_file_or_a_stronger_check_holds() {
        let f = findings(BASE, BASE);
        assert!(f.is_empty(), "{f:?}");
        let stronger = BASE.replace(
            "assert.Equal(t, 1, Sub(2, 1))",
            "require.Equal(t, 1, Sub(2, 1))",
        );
        assert!(findings(BASE, &stronger).is_empty());
        let units: Vec<String> = parse(BASE)
            .unwrap()
            .units
            .iter()
            .map(|u| u.id.clone())
            .collect();
        assert!(units.contains(&"S.TestInSuite".to_string()), "{units:?}");
    }

    /// The bypasses a hostile review found in the first version.
    #[test]
    fn the_reviewed_bypasses_are_found() {
        let check = "\tif got != 3 {\n\t\tt.Errorf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n";
        for to in [
            "\tif got != 3 {\n\t\tfmt.Errorf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n",
            "\tif got != 3 {\n\t\tt.Log(errors.New(\"x\").Error())\n\t}\n",
            "\tif got == nil {\n\t\tt.Errorf(\"Add\")\n\t}\n",
            "\tif got != got {\n\t\tt.Errorf(\"Add\")\n\t}\n",
            "\tif false && got != 3 {\n\t\tt.Errorf(\"Add\")\n\t}\n",
            "\tfor false {\n\t\tt.Fatal(\"Add\")\n\t}\n",
            "\tswitch {\n\tcase false:\n\t\tt.Fatal(\"Add\")\n\t}\n",
            "\tgo func() {\n\t\tif got != 3 {\n\t\t\tt.Errorf(\"Add\")\n\t\t}\n\t}()\n",
            "\tcheck := func() {\n\t\tif got != 3 {\n\t\t\tt.Errorf(\"Add\")\n\t\t}\n\t}\n\t// check\n",
        ] {
            let patched = BASE.replace(check, to);
            assert_ne!(patched, BASE);
            let f = findings(BASE, &patched);
            assert!(f.iter().any(|m| m.contains("`TestAdd`")), "{to}: {f:?}");
        }
        let swap = |from: &str, to: &str| {
            let patched = BASE.replace(from, to);
            assert_ne!(patched, BASE, "{from}");
            findings(BASE, &patched)
        };
        let eq = "assert.Equal(t, 1, Sub(2, 1))";
        for to in [
            "assert.Regexp(t, \".*\", Sub(2, 1))",
            "assert.True(t, true)",
        ] {
            assert!(swap(eq, to).iter().any(|m| m.contains("`TestSub`")), "{to}");
        }
        // A local function literal shadowing the helper.
        let f = swap(
            "\tcheckSum(t, Add(1, 2))",
            "\tcheckSum := func(*testing.T, int) {}\n\tcheckSum(t, Add(1, 2))",
        );
        assert!(f.iter().any(|m| m.contains("`TestHelper`")), "{f:?}");
        // `a := assert.New(t)` and a call in an `if` condition are seen.
        let named = BASE.replace(eq, "a := assert.New(t)\n\ta.Equal(1, Sub(2, 1))");
        let f = findings(&named, &named.replace("\ta.Equal(1, Sub(2, 1))", "\t_ = a"));
        assert!(f.iter().any(|m| m.contains("`TestSub`")), "{f:?}");
        let guarded = BASE.replace(eq, "if !assert.Equal(t, 1, Sub(2, 1)) {\n\t\treturn\n\t}");
        let f = findings(&guarded, &BASE.replace(eq, "_ = Sub(2, 1)"));
        assert!(f.iter().any(|m| m.contains("`TestSub`")), "{f:?}");
        // An error printed differently is not a finding.
        let printed = BASE.replace(
            "t.Errorf(\"got %d\", got)",
            "t.Errorf(\"%s\", errors.New(\"x\").Error())",
        );
        let plain = printed.replace("errors.New(\"x\").Error()", "errors.New(\"x\")");
        assert!(findings(&printed, &plain).is_empty());
    }

    /// Each `(from, to)` edit of `BASE` has a finding holding `needle`.
    #[track_caller]
    fn found(edits: &[(&str, &str, &str)]) {
        crate::units::edits_found(parse, BASE, edits)
    }

    #[test]
    fn removed_weakened_and_dead_checks_are_named() {
        let removed = BASE.replace(
            "\tif got != 3 {\n\t\tt.Errorf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n",
            "",
        ) + "\nfunc TestMore(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Error(\"x\")\n\t}\n}\n";
        let f = findings(BASE, &removed);
        assert!(
            f.iter()
                .any(|m| m.contains("`TestAdd`") && m.contains("was removed")),
            "{f:?}"
        );
        let got = "\tgot := Add(1, 2)\n";
        let dead = "can no longer fail";
        found(&[
            (
                "assert.Equal(t, 1, Sub(2, 1))",
                "assert.NotNil(t, Sub(2, 1))",
                "weaker",
            ),
            (
                "if got != 3 {\n\t\tt.Errorf(\"Add",
                "if got < 0 {\n\t\tt.Errorf(\"Add",
                "weaker",
            ),
            (got, "\tgot := Add(1, 2)\n\treturn\n", dead),
            (got, "\tgot := Add(1, 2)\n\tt.SkipNow()\n", dead),
            (
                "if Add(0, 1) != 1 {\n\t\t\tt.Fatal",
                "if false {\n\t\t\tt.Fatal",
                "`TestSubtests`",
            ),
            (
                "\tif got != 3 {\n\t\tt.Errorf(\"got %d\", got)\n\t}\n",
                "\t_ = got\n",
                "`TestHelper`",
            ),
            ("func TestSub(", "func testSub(", "`TestSub`"),
            (
                "\tassert.Equal(t, 1, Sub(2, 1))\n",
                "\tcheck := func() { assert.Equal(t, 1, Sub(2, 1)) }\n\t_ = 1\n",
                dead,
            ),
        ]);
    }
}
