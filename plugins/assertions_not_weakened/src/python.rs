//! Python test files on ruff's syntax tree: pytest functions and classes,
//! unittest `TestCase` methods, their assertions (`assert`, `pytest.raises`,
//! unittest `assert*`, mock `assert_called*`, `pytest.fail`) and whether
//! each can still run.

use crate::units::{Assertion, Kind, Lines, Parsed, Unit, snippet};
use ruff_python_ast::{
    BoolOp, CmpOp, ExceptHandler, Expr, ExprCall, Stmt, StmtFunctionDef, UnaryOp,
};
use ruff_text_size::Ranged;

/// Parses `src`; `Err` names the first syntax error and its line.
pub fn parse(src: &str) -> Result<Parsed, String> {
    let parsed = ruff_python_parser::parse_module(src).map_err(|e| {
        let line = Lines::new(src).line(e.location.start().to_usize());
        format!("line {line}: {}", e.error)
    })?;
    let mut w = Walker {
        src,
        lines: Lines::new(src),
        units: Vec::new(),
    };
    let mut module = Unit {
        id: "<outside any function>".into(),
        is_test: false,
        line: 1,
        asserts: Vec::new(),
    };
    w.module(&parsed.syntax().body, "", false, &mut module);
    w.units.push(module);
    Ok(Parsed { units: w.units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
    units: Vec<Unit>,
}

/// pytest's defaults: `python_classes = Test`, `python_functions = test`;
/// unittest collects `test*` methods of any `TestCase` subclass.
fn test_class(c: &ruff_python_ast::StmtClassDef) -> bool {
    c.name.as_str().starts_with("Test")
        || c.arguments.as_ref().is_some_and(|args| {
            args.args.iter().any(|base| {
                dotted(base).is_some_and(|n| n.ends_with("TestCase") || n.ends_with("TestSuite"))
            })
        })
}

/// `a.b.c` for a name or an attribute chain.
fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr.as_str())),
        _ => None,
    }
}

/// The last name of a call's function: `assertEqual` of `self.assertEqual`.
fn callee(call: &ExprCall) -> Option<(String, String)> {
    let full = dotted(&call.func)?;
    let last = full.rsplit('.').next().unwrap_or(&full).to_string();
    Some((full, last))
}

fn falsy_constant(e: &Expr) -> bool {
    match e {
        Expr::BooleanLiteral(b) => !b.value,
        Expr::NoneLiteral(_) => true,
        Expr::NumberLiteral(n) => matches!(
            &n.value,
            ruff_python_ast::Number::Int(i) if i.as_u64() == Some(0)
        ),
        Expr::StringLiteral(s) => s.value.is_empty(),
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => truthy_constant(&u.operand),
        _ => false,
    }
}

fn truthy_constant(e: &Expr) -> bool {
    match e {
        Expr::BooleanLiteral(b) => b.value,
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::BytesLiteral(_) => {
            !falsy_constant(e)
        }
        Expr::Tuple(t) => !t.elts.is_empty(),
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => falsy_constant(&u.operand),
        _ => false,
    }
}

/// What `assert e` checks.
fn kind_of(e: &Expr) -> Kind {
    match e {
        e if e.is_literal_expr() || matches!(e, Expr::Tuple(_) | Expr::List(_) | Expr::Dict(_)) => {
            Kind::Constant
        }
        Expr::Compare(c) => {
            let none = |x: &Expr| matches!(x, Expr::NoneLiteral(_));
            let len_call = |x: &Expr| matches!(x, Expr::Call(call) if dotted(&call.func).as_deref() == Some("len"));
            let zero_or_one = |x: &Expr| {
                matches!(x, Expr::NumberLiteral(n) if matches!(&n.value,
                    ruff_python_ast::Number::Int(i) if i.as_u64().is_some_and(|v| v <= 1)))
            };
            let mut best = Kind::Constant;
            let mut left = &*c.left;
            for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                let k = match op {
                    CmpOp::Eq | CmpOp::Is => Kind::Equality,
                    CmpOp::NotEq | CmpOp::IsNot if none(right) || none(left) => Kind::Defined,
                    CmpOp::NotEq | CmpOp::IsNot => Kind::Comparison,
                    CmpOp::In | CmpOp::NotIn => Kind::Containment,
                    CmpOp::Gt | CmpOp::GtE if len_call(left) && zero_or_one(right) => Kind::Length,
                    CmpOp::Lt | CmpOp::LtE if len_call(right) && zero_or_one(left) => Kind::Length,
                    _ => Kind::Comparison,
                };
                if k.tier() > best.tier() {
                    best = k;
                }
                left = right;
            }
            best
        }
        Expr::Call(call) => match dotted(&call.func).as_deref() {
            Some("isinstance" | "issubclass") => Kind::Type,
            Some("len" | "bool" | "any" | "all" | "callable" | "hasattr") => {
                if dotted(&call.func).as_deref() == Some("len") {
                    Kind::Length
                } else {
                    Kind::Truthiness
                }
            }
            _ => Kind::Truthiness,
        },
        Expr::BoolOp(b) => {
            let kinds = b.values.iter().map(kind_of);
            let pick = match b.op {
                BoolOp::And => kinds.max_by_key(|k| k.tier()),
                BoolOp::Or => kinds.min_by_key(|k| k.tier()),
            };
            pick.unwrap_or(Kind::Truthiness)
        }
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => match kind_of(&u.operand) {
            Kind::Equality | Kind::Containment | Kind::Type | Kind::Comparison => Kind::Comparison,
            Kind::Constant => Kind::Constant,
            _ => Kind::Truthiness,
        },
        _ => Kind::Truthiness,
    }
}

/// What a call statement checks, when it is an assertion.
fn call_kind(call: &ExprCall) -> Option<Kind> {
    let (full, last) = callee(call)?;
    let first = call.arguments.args.first();
    Some(match last.as_str() {
        "raises" | "warns" | "deprecated_call" if full.starts_with("pytest") => Kind::Raises,
        "fail" if full == "pytest.fail" || full.ends_with("self.fail") => Kind::Fail,
        "assertRaises"
        | "assertRaisesRegex"
        | "assertRaisesRegexp"
        | "assertWarns"
        | "assertWarnsRegex"
        | "assertRaisesMessage" => Kind::Raises,
        "assertEqual"
        | "assertEquals"
        | "failUnlessEqual"
        | "assertDictEqual"
        | "assertListEqual"
        | "assertTupleEqual"
        | "assertSetEqual"
        | "assertSequenceEqual"
        | "assertMultiLineEqual"
        | "assertCountEqual"
        | "assertItemsEqual"
        | "assertAlmostEqual"
        | "assertAlmostEquals"
        | "assertIs"
        | "assertIsNone"
        | "assertJSONEqual"
        | "assertHTMLEqual"
        | "assertXMLEqual"
        | "assertQuerySetEqual"
        | "assertQuerysetEqual"
        | "assertRedirects"
        | "assertNumQueries"
        | "assertLogs"
        | "assert_called_with"
        | "assert_called_once_with"
        | "assert_any_call"
        | "assert_has_calls"
        | "assert_awaited_with"
        | "assert_awaited_once_with" => Kind::Equality,
        "assertGreater"
        | "assertGreaterEqual"
        | "assertLess"
        | "assertLessEqual"
        | "assertNotEqual"
        | "assertNotEquals"
        | "assertIsNot"
        | "assertNotAlmostEqual"
        | "assertRegex"
        | "assertRegexpMatches"
        | "assertNotRegex"
        | "assert_not_called"
        | "assert_called_once"
        | "assert_not_awaited"
        | "assert_awaited_once" => Kind::Comparison,
        "assertIn"
        | "assertNotIn"
        | "assertContains"
        | "assertNotContains"
        | "assertDictContainsSubset"
        | "assertInHTML"
        | "assertTemplateUsed" => Kind::Containment,
        "assertIsInstance" | "assertNotIsInstance" => Kind::Type,
        "assertIsNotNone" => Kind::Defined,
        "assertTrue" | "assert_" | "failUnless" => match first {
            Some(e) => match kind_of(e) {
                Kind::Constant => Kind::Constant,
                k => k,
            },
            None => Kind::Truthiness,
        },
        "assertFalse" | "failIf" => match first {
            Some(e) if e.is_literal_expr() => Kind::Constant,
            _ => Kind::Truthiness,
        },
        "assert_called" | "assert_awaited" => Kind::Truthiness,
        // A helper of the suite's own (`assert_valid`, `check_response`
        // are not guessed): counted as exact, so replacing it by a plain
        // `assert x` is weaker.
        name if name.starts_with("assert") || name.starts_with("_assert") => Kind::Helper,
        _ => return None,
    })
}

/// Handlers that catch an assertion's failure and do not raise again.
fn swallowing(handlers: &[ExceptHandler]) -> Option<usize> {
    handlers.iter().find_map(|h| {
        let ExceptHandler::ExceptHandler(h) = h;
        let broad = match h.type_.as_deref() {
            None => true,
            Some(t) => {
                let names: Vec<&Expr> = match t {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    t => vec![t],
                };
                names.iter().any(|n| {
                    dotted(n).is_some_and(|n| {
                        matches!(
                            n.rsplit('.').next().unwrap_or(&n),
                            "AssertionError" | "Exception" | "BaseException"
                        )
                    })
                })
            }
        };
        let reraises = h.body.iter().any(|s| matches!(s, Stmt::Raise(_)));
        (broad && !reraises).then_some(h.range.start().to_usize())
    })
}

impl Walker<'_> {
    /// Module or class body: functions and classes become units; other
    /// statements' assertions go to `outside`.
    fn module(&mut self, body: &[Stmt], prefix: &str, in_test_class: bool, outside: &mut Unit) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(f) => self.function(f, prefix, in_test_class),
                Stmt::ClassDef(c) => {
                    let name = format!("{prefix}{}::", c.name.as_str());
                    self.module(&c.body, &name, test_class(c), outside);
                }
                s => self.block(std::slice::from_ref(s), &None, &mut outside.asserts),
            }
        }
    }

    fn function(&mut self, f: &StmtFunctionDef, prefix: &str, in_test_class: bool) {
        let name = f.name.as_str();
        let is_test = name.starts_with("test") && (prefix.is_empty() || in_test_class);
        let mut unit = Unit {
            id: format!("{prefix}{name}"),
            is_test,
            line: self.lines.line(f.range.start().to_usize()),
            asserts: Vec::new(),
        };
        self.block(&f.body, &None, &mut unit.asserts);
        self.units.push(unit);
    }

    fn assertion(&self, node: &impl Ranged, kind: Kind, dead: &Option<String>) -> Assertion {
        let (s, e) = (node.start().to_usize(), node.end().to_usize());
        Assertion {
            text: snippet(self.src, s, e),
            line: self.lines.line(s),
            kind,
            dead: dead.clone(),
        }
    }

    /// A block's statements in order; after an unconditional `return`,
    /// `raise`, `continue` or `break` the rest of the block is dead.
    fn block(&self, stmts: &[Stmt], dead: &Option<String>, out: &mut Vec<Assertion>) {
        let mut dead = dead.clone();
        for stmt in stmts {
            self.stmt(stmt, &dead, out);
            if dead.is_none() {
                let line = self.lines.line(stmt.start().to_usize());
                let why = match stmt {
                    Stmt::Return(_) => Some("`return`"),
                    Stmt::Raise(_) => Some("`raise`"),
                    Stmt::Continue(_) => Some("`continue`"),
                    Stmt::Break(_) => Some("`break`"),
                    Stmt::Expr(e) => match &*e.value {
                        Expr::Call(c) => match callee(c).map(|(full, _)| full).as_deref() {
                            Some("pytest.skip" | "self.skipTest" | "unittest.skip") => {
                                Some("a skip")
                            }
                            Some("pytest.xfail") => Some("`pytest.xfail`"),
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(why) = why {
                    dead = Some(format!("it comes after {why} on line {line}"));
                }
            }
        }
    }

    fn stmt(&self, stmt: &Stmt, dead: &Option<String>, out: &mut Vec<Assertion>) {
        let line = |n: &dyn Ranged| self.lines.line(n.start().to_usize());
        let or = |why: String| dead.clone().or(Some(why));
        match stmt {
            Stmt::Assert(a) => out.push(self.assertion(a, kind_of(&a.test), dead)),
            Stmt::Expr(e) => self.expr(&e.value, dead, out),
            Stmt::Assign(a) => self.expr(&a.value, dead, out),
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.expr(v, dead, out)
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.expr(v, dead, out)
                }
            }
            Stmt::If(i) => {
                let never = falsy_constant(&i.test);
                let always = truthy_constant(&i.test);
                let body_dead = if never {
                    or(format!(
                        "it is under `if` with a false condition on line {}",
                        line(i)
                    ))
                } else {
                    dead.clone()
                };
                self.block(&i.body, &body_dead, out);
                for clause in &i.elif_else_clauses {
                    let clause_dead = if always {
                        or(format!(
                            "the `if` on line {} always takes its first branch",
                            line(i)
                        ))
                    } else if clause.test.as_ref().is_some_and(falsy_constant) {
                        or(format!(
                            "it is under `elif` with a false condition on line {}",
                            line(clause)
                        ))
                    } else {
                        dead.clone()
                    };
                    self.block(&clause.body, &clause_dead, out);
                }
            }
            Stmt::While(w) => {
                let body_dead = if falsy_constant(&w.test) {
                    or(format!(
                        "it is under `while` with a false condition on line {}",
                        line(w)
                    ))
                } else {
                    dead.clone()
                };
                self.block(&w.body, &body_dead, out);
                self.block(&w.orelse, dead, out);
            }
            Stmt::For(f) => {
                self.block(&f.body, dead, out);
                self.block(&f.orelse, dead, out);
            }
            Stmt::With(w) => {
                let mut body_dead = dead.clone();
                for item in &w.items {
                    if let Expr::Call(c) = &item.context_expr {
                        let full = callee(c).map(|(full, _)| full);
                        let suppresses =
                            matches!(full.as_deref(), Some("contextlib.suppress" | "suppress"))
                                && c.arguments.args.iter().any(|t| {
                                    dotted(t).is_some_and(|n| {
                                        matches!(
                                            n.rsplit('.').next().unwrap_or(&n),
                                            "AssertionError" | "Exception" | "BaseException"
                                        )
                                    })
                                });
                        if suppresses {
                            body_dead = or(format!(
                                "`suppress` on line {} swallows its failure",
                                line(c)
                            ));
                        } else if let Some(k) = call_kind(c) {
                            out.push(self.assertion(c, k, dead));
                        }
                    }
                }
                self.block(&w.body, &body_dead, out);
            }
            Stmt::Try(t) => {
                let body_dead = match swallowing(&t.handlers) {
                    Some(at) => or(format!(
                        "the `except` on line {} swallows its failure",
                        self.lines.line(at)
                    )),
                    None => dead.clone(),
                };
                self.block(&t.body, &body_dead, out);
                for h in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = h;
                    self.block(&h.body, dead, out);
                }
                self.block(&t.orelse, &body_dead, out);
                self.block(&t.finalbody, dead, out);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    self.block(&case.body, dead, out);
                }
            }
            // A nested function's or class's assertions are the unit's: a
            // test calls its own closures.
            Stmt::FunctionDef(f) => self.block(&f.body, dead, out),
            Stmt::ClassDef(c) => self.block(&c.body, dead, out),
            _ => {}
        }
    }

    /// Assertion calls anywhere in an expression (`x = self.assertRaises(…)`,
    /// a call in a call's arguments).
    fn expr(&self, e: &Expr, dead: &Option<String>, out: &mut Vec<Assertion>) {
        if let Expr::Call(c) = e {
            if let Some(k) = call_kind(c) {
                out.push(self.assertion(c, k, dead));
                return;
            }
            for arg in c.arguments.args.iter() {
                self.expr(arg, dead, out);
            }
            for kw in c.arguments.keywords.iter() {
                self.expr(&kw.value, dead, out);
            }
            if let Expr::Attribute(a) = &*c.func {
                self.expr(&a.value, dead, out);
            }
        } else if let Expr::Await(a) = e {
            self.expr(&a.value, dead, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::judge;

    fn findings(base: &str, patched: &str) -> Vec<String> {
        judge(&parse(base).unwrap(), &parse(patched).unwrap())
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    }

    const BASE: &str = "import pytest\n\ndef test_name():\n    x = f()\n    assert x == 'y'\n\nclass TestB:\n    def test_b(self):\n        with pytest.raises(ValueError):\n            g()\n";

    #[test]
    fn an_assertion_removed_beside_an_added_test_is_found() {
        let patched = "import pytest\n\ndef test_name():\n    x = f()\n\ndef test_new():\n    assert h() == 1\n    assert h() == 2\n\nclass TestB:\n    def test_b(self):\n        with pytest.raises(ValueError):\n            g()\n";
        let f = findings(BASE, patched);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("test `test_name`: assertion `assert x == 'y'`"),
            "{f:?}"
        );
    }

    #[test]
    fn a_vacuous_replacement_is_weaker() {
        let patched = BASE.replace("assert x == 'y'", "assert x is not None");
        let f = findings(BASE, &patched);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("a not-None/defined check is weaker than an exact equality"),
            "{f:?}"
        );
        let truthy = BASE.replace("assert x == 'y'", "assert x");
        assert_eq!(findings(BASE, &truthy).len(), 1);
        let stronger = BASE.replace("assert x == 'y'", "assert x == 'z'");
        assert!(findings(BASE, &stronger).is_empty());
    }

    #[test]
    fn an_early_return_and_if_false_and_a_swallowing_except_make_assertions_dead() {
        for patched in [
            BASE.replace("    x = f()\n", "    x = f()\n    return\n"),
            BASE.replace(
                "    assert x == 'y'",
                "    if False:\n        assert x == 'y'",
            ),
            BASE.replace(
                "    assert x == 'y'",
                "    try:\n        assert x == 'y'\n    except Exception:\n        pass",
            ),
            BASE.replace(
                "    assert x == 'y'",
                "    try:\n        assert x == 'y'\n    except:\n        pass",
            ),
        ] {
            let f = findings(BASE, &patched);
            assert_eq!(f.len(), 1, "{patched}\n{f:?}");
            assert!(f[0].contains("can no longer fail"), "{f:?}");
        }
        // A handler that raises again does not swallow.
        let reraise = BASE.replace(
            "    assert x == 'y'",
            "    try:\n        assert x == 'y'\n    except Exception:\n        log()\n        raise",
        );
        assert!(findings(BASE, &reraise).is_empty());
    }

    #[test]
    fn a_deleted_or_renamed_test_is_found_and_a_raises_counts() {
        let renamed = BASE.replace("def test_name", "def helper_name");
        let f = findings(BASE, &renamed);
        assert!(
            f.iter()
                .any(|m| m.contains("`test_name`") && m.contains("deleted or renamed away")),
            "{f:?}"
        );
        let no_raises = BASE.replace(
            "        with pytest.raises(ValueError):\n            g()\n",
            "        g()\n",
        );
        let f = findings(BASE, &no_raises);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("TestB::test_b"), "{f:?}");
    }

    #[test]
    fn unittest_methods_have_their_strength() {
        let base = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(), 3)\n";
        let weaker = base.replace("self.assertEqual(f(), 3)", "self.assertTrue(f())");
        let f = findings(base, &weaker);
        assert_eq!(f.len(), 1, "{f:?}");
        let same = base.replace("self.assertEqual(f(), 3)", "self.assertTrue(f() == 3)");
        assert!(findings(base, &same).is_empty());
        let constant = base.replace("self.assertEqual(f(), 3)", "self.assertTrue(True)");
        assert_eq!(findings(base, &constant).len(), 1);
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let e = parse("def test_a(:\n").unwrap_err();
        assert!(e.starts_with("line 1"), "{e}");
    }
}
