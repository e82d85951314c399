//! Python test files on ruff's syntax tree: pytest functions and classes,
//! unittest `TestCase` methods, their assertions (`assert`, `pytest.raises`,
//! unittest `assert*`, mock `assert_called*`, `pytest.fail`) and whether
//! each can still run.

use crate::units::{Assertion, Kind, Lines, Parsed, Unit, shown, snippet};
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
        scope: std::cell::Cell::new((0, src.len())),
    };
    let mut module = Unit {
        id: "<outside any function>".into(),
        is_test: false,
        line: 1,
        asserts: Vec::new(),
        risks: Vec::new(),
    };
    w.module(&parsed.syntax().body, "", false, &[], &mut module);
    w.units.push(module);
    let mut units = w.units;
    crate::units::resolve_helpers(&mut units);
    Ok(Parsed { units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
    units: Vec<Unit>,
    /// The byte range of the function being walked: where a nested
    /// function must be named again to run.
    scope: std::cell::Cell<(usize, usize)>,
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
        Expr::NumberLiteral(n) => match &n.value {
            ruff_python_ast::Number::Int(i) => i.as_u64() == Some(0),
            ruff_python_ast::Number::Float(f) => *f == 0.0,
            ruff_python_ast::Number::Complex { real, imag } => *real == 0.0 && *imag == 0.0,
        },
        Expr::StringLiteral(s) => s.value.is_empty(),
        Expr::BytesLiteral(b) => b.value.is_empty(),
        Expr::Tuple(t) => t.elts.is_empty(),
        Expr::List(l) => l.elts.is_empty(),
        Expr::Dict(d) => d.items.is_empty(),
        Expr::Set(s) => s.elts.is_empty(),
        // False whenever the code runs.
        e if dotted(e).is_some_and(|n| n == "TYPE_CHECKING" || n.ends_with(".TYPE_CHECKING")) => {
            true
        }
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => truthy_constant(&u.operand),
        Expr::BoolOp(b) if b.op == BoolOp::And => b.values.iter().any(falsy_constant),
        Expr::BoolOp(b) => b.values.iter().all(falsy_constant),
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
        Expr::BoolOp(b) if b.op == BoolOp::Or => b.values.iter().any(truthy_constant),
        Expr::BoolOp(b) => b.values.iter().all(truthy_constant),
        _ => false,
    }
}

/// `mock.ANY` and the like: equal to everything.
fn wildcard(e: &Expr) -> bool {
    dotted(e).is_some_and(|n| n == "ANY" || n.ends_with(".ANY"))
}

/// An equality that cannot fail: two literals, the same expression on
/// both sides, or a wildcard.
fn tautology(src: &str, left: &Expr, right: &Expr) -> bool {
    let text = |e: &Expr| snippet(src, e.start().to_usize(), e.end().to_usize());
    (literal(left) && literal(right))
        || text(left) == text(right)
        || wildcard(left)
        || wildcard(right)
}

fn literal(e: &Expr) -> bool {
    e.is_literal_expr()
        || matches!(e, Expr::Tuple(t) if t.elts.iter().all(literal))
        || matches!(e, Expr::List(l) if l.elts.iter().all(literal))
}

/// What `assert e` checks.
fn kind_of(src: &str, e: &Expr) -> Kind {
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
                    CmpOp::Eq | CmpOp::Is if tautology(src, left, right) => Kind::Constant,
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
            let kinds = b.values.iter().map(|v| kind_of(src, v));
            let pick = match b.op {
                BoolOp::And => kinds.max_by_key(|k| k.tier()),
                BoolOp::Or => kinds.min_by_key(|k| k.tier()),
            };
            pick.unwrap_or(Kind::Truthiness)
        }
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => match kind_of(src, &u.operand) {
            Kind::Equality | Kind::Containment | Kind::Type | Kind::Comparison => Kind::Comparison,
            Kind::Constant => Kind::Constant,
            _ => Kind::Truthiness,
        },
        _ => Kind::Truthiness,
    }
}

/// What a call checks, when it is an assertion; `in_with`: it is a `with`
/// statement's context (`with pytest.raises(E):`).
fn call_kind(src: &str, call: &ExprCall, in_with: bool) -> Option<Kind> {
    let (full, last) = callee(call)?;
    let args = &call.arguments.args;
    let first = args.first();
    // `pytest.raises(E)` or `self.assertRaises(E)` alone, neither a
    // context nor given a callable, checks nothing.
    let raises = |k: Kind| {
        if in_with || args.len() > 1 {
            k
        } else {
            Kind::Constant
        }
    };
    let exact = |k: Kind| match (args.first(), args.get(1)) {
        (Some(a), Some(b)) if tautology(src, a, b) => Kind::Constant,
        _ => k,
    };
    Some(match last.as_str() {
        "raises" | "warns" | "deprecated_call" if full.starts_with("pytest") => {
            raises(Kind::Raises)
        }
        "fail" if full == "pytest.fail" || full.ends_with("self.fail") => Kind::Fail,
        "assertRaises"
        | "assertRaisesRegex"
        | "assertRaisesRegexp"
        | "assertWarns"
        | "assertWarnsRegex"
        | "assertRaisesMessage" => raises(Kind::Raises),
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
        | "assertLogs" => exact(Kind::Equality),
        "assert_called_with"
        | "assert_called_once_with"
        | "assert_any_call"
        | "assert_has_calls"
        | "assert_awaited_with"
        | "assert_awaited_once_with" => Kind::Equality,
        "assertGreater"
        | "assertGreaterEqual"
        | "assertLess"
        | "assertLessEqual"
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
        "assertNotEqual" | "assertNotEquals" | "assertIsNot" => exact(Kind::Comparison),
        "assertTrue" | "assert_" | "failUnless" => match first {
            Some(e) => match kind_of(src, e) {
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

/// Whether `t` names an exception class an assertion's failure is: a
/// handler for it catches the failure.
fn catches_failure(t: &Expr) -> bool {
    let names: Vec<&Expr> = match t {
        Expr::Tuple(t) => t.elts.iter().collect(),
        t => vec![t],
    };
    names.iter().any(|n| {
        dotted(n).is_none_or(|n| {
            matches!(
                n.rsplit('.').next().unwrap_or(&n),
                "AssertionError" | "Exception" | "BaseException"
            )
        })
    })
}

/// Handlers that catch an assertion's failure and do not raise again
/// before anything else ends them.
fn swallowing(handlers: &[ExceptHandler]) -> Option<usize> {
    handlers.iter().find_map(|h| {
        let ExceptHandler::ExceptHandler(h) = h;
        let broad = h.type_.as_deref().is_none_or(catches_failure);
        let reraises = matches!(
            h.body.iter().find(|s| terminator(s).is_some()),
            Some(Stmt::Raise(_))
        );
        (broad && !reraises).then_some(h.range.start().to_usize())
    })
}

/// What ends a block for good when this statement runs, on its own:
/// `return`, `raise`, `continue`, `break`, a skip.
fn terminator(stmt: &Stmt) -> Option<&'static str> {
    match stmt {
        Stmt::Return(_) => Some("`return`"),
        Stmt::Raise(_) => Some("`raise`"),
        Stmt::Continue(_) => Some("`continue`"),
        Stmt::Break(_) => Some("`break`"),
        Stmt::Expr(e) => match &*e.value {
            Expr::Call(c) => match callee(c) {
                Some((full, last))
                    if matches!(
                        full.as_str(),
                        "pytest.skip" | "self.skipTest" | "unittest.skip" | "skip"
                    ) || last == "skipTest" =>
                {
                    Some("a skip")
                }
                Some((full, _)) if matches!(full.as_str(), "pytest.xfail" | "xfail") => {
                    Some("`pytest.xfail`")
                }
                Some((full, _))
                    if matches!(
                        full.as_str(),
                        "sys.exit" | "exit" | "quit" | "os._exit" | "os.abort"
                    ) =>
                {
                    Some("an exit")
                }
                _ => None,
            },
            _ => None,
        },
        // A block that always runs and always ends: `if True: return`,
        // `if c: return` / `else: return`, `with …: return`,
        // `try: … finally: return`.
        Stmt::If(i) => {
            let body = block_ends(&i.body);
            if truthy_constant(&i.test) {
                return body;
            }
            let has_else = i.elif_else_clauses.iter().any(|c| c.test.is_none());
            if has_else
                && body.is_some()
                && i.elif_else_clauses
                    .iter()
                    .all(|c| block_ends(&c.body).is_some())
            {
                body
            } else {
                None
            }
        }
        Stmt::With(w) => block_ends(&w.body),
        Stmt::Try(t) => block_ends(&t.finalbody).or_else(|| {
            let handlers_end = t.handlers.iter().all(|h| {
                let ExceptHandler::ExceptHandler(h) = h;
                block_ends(&h.body).is_some()
            });
            block_ends(&t.body).filter(|_| handlers_end)
        }),
        _ => None,
    }
}

fn block_ends(stmts: &[Stmt]) -> Option<&'static str> {
    stmts.iter().find_map(terminator)
}

/// A test function's decorators that only parametrize, patch or mark it:
/// any other added one can replace the function or deselect it.
fn harmless_decorator(d: &Expr) -> Result<(), String> {
    let (call, target) = match d {
        Expr::Call(c) => (Some(c), &*c.func),
        e => (None, e),
    };
    let name = dotted(target).unwrap_or_default();
    let last = name.rsplit('.').next().unwrap_or(&name);
    if matches!(last, "fixture" | "yield_fixture") {
        return Err("it is now a fixture, which pytest never collects as a test".into());
    }
    if last == "parametrize" {
        let empty = call.and_then(|c| c.arguments.args.get(1)).is_some_and(|v| {
            matches!(v, Expr::List(l) if l.elts.is_empty())
                || matches!(v, Expr::Tuple(t) if t.elts.is_empty())
        });
        return if empty {
            Err("it is parametrized over nothing, so pytest skips it".into())
        } else {
            Ok(())
        };
    }
    // Skip, xfail and flaky markers are `disable`'s findings; reruns are
    // a weakening of their own.
    if matches!(last, "flaky" | "repeat" | "retry") {
        return Err("a failure is retried until it passes".into());
    }
    let harmless = name.starts_with("pytest.mark.")
        || name.starts_with("mark.")
        || matches!(
            last,
            "patch"
                | "object"
                | "dict"
                | "multiple"
                | "usefixtures"
                | "override_settings"
                | "modify_settings"
                | "freeze_time"
                | "given"
                | "settings"
                | "example"
                | "tag"
                | "skipUnlessDBFeature"
                | "skipIfDBFeature"
                | "isolate_apps"
                | "requires_tz_support"
                | "ignore_warnings"
        );
    if harmless {
        Ok(())
    } else {
        Err("an added decorator can replace the test function or deselect it".into())
    }
}

/// Whether a function's own body (not a nested function's) yields.
fn yields(body: &[Stmt]) -> bool {
    use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
    struct Y(bool);
    impl<'a> Visitor<'a> for Y {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Yield(_) | Expr::YieldFrom(_) => self.0 = true,
                Expr::Lambda(_) => {}
                e => walk_expr(self, e),
            }
        }
    }
    let mut y = Y(false);
    for s in body {
        y.visit_stmt(s);
    }
    y.0
}

impl Walker<'_> {
    /// Module or class body: functions and classes become units; other
    /// statements' assertions go to `outside`. `class_risks`: what the
    /// enclosing test class does to every test in it.
    fn module(
        &mut self,
        body: &[Stmt],
        prefix: &str,
        in_test_class: bool,
        class_risks: &[(String, String)],
        outside: &mut Unit,
    ) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(f) => self.function(f, prefix, in_test_class, class_risks),
                Stmt::ClassDef(c) => {
                    let name = format!("{prefix}{}::", c.name.as_str());
                    let mut risks = class_risks.to_vec();
                    let constructor = c.body.iter().any(|s| {
                        matches!(s, Stmt::FunctionDef(f) if matches!(f.name.as_str(), "__init__" | "__new__"))
                    });
                    if constructor && c.name.as_str().starts_with("Test") && !test_case(c) {
                        risks.push((
                            format!("constructor:{name}"),
                            format!(
                                "its class `{}` defines `__init__` or `__new__`, and pytest collects no test of a class with a constructor",
                                c.name.as_str()
                            ),
                        ));
                    }
                    for d in &c.decorator_list {
                        if let Err(why) = harmless_decorator(&d.expression) {
                            let text = snippet(self.src, d.start().to_usize(), d.end().to_usize());
                            risks.push((
                                format!("class-decorator:{text}"),
                                format!("`{}` was added to its class: {why}", shown(&text)),
                            ));
                        }
                    }
                    self.module(&c.body, &name, test_class(c), &risks, outside);
                }
                // Definitions under a module- or class-level `if`, `try`
                // or `with` (`if HAS_NUMPY:`, `try: … except ImportError:`)
                // are tests like any other; under a condition that is
                // always false they are never defined, so not there.
                Stmt::If(i) => {
                    if !falsy_constant(&i.test) {
                        self.module(&i.body, prefix, in_test_class, class_risks, outside);
                    }
                    for clause in &i.elif_else_clauses {
                        let never = clause.test.as_ref().is_some_and(falsy_constant)
                            || (clause.test.is_none() && truthy_constant(&i.test));
                        if !never {
                            self.module(&clause.body, prefix, in_test_class, class_risks, outside);
                        }
                    }
                }
                Stmt::Try(t) => {
                    for part in [&t.body, &t.orelse, &t.finalbody] {
                        self.module(part, prefix, in_test_class, class_risks, outside);
                    }
                    for h in &t.handlers {
                        let ExceptHandler::ExceptHandler(h) = h;
                        self.module(&h.body, prefix, in_test_class, class_risks, outside);
                    }
                }
                Stmt::With(w) => self.module(&w.body, prefix, in_test_class, class_risks, outside),
                s => {
                    self.block(std::slice::from_ref(s), &None, &mut outside.asserts);
                }
            }
        }
    }

    fn function(
        &mut self,
        f: &StmtFunctionDef,
        prefix: &str,
        in_test_class: bool,
        class_risks: &[(String, String)],
    ) {
        let name = f.name.as_str();
        let is_test = name.starts_with("test") && (prefix.is_empty() || in_test_class);
        let (start, end) = (f.range.start().to_usize(), f.range.end().to_usize());
        let mut unit = Unit {
            id: format!("{prefix}{name}"),
            is_test,
            line: self.lines.line(start),
            asserts: Vec::new(),
            risks: if is_test {
                class_risks.to_vec()
            } else {
                Vec::new()
            },
        };
        if is_test {
            if f.is_async {
                unit.risks.push((
                    "async".into(),
                    "it is now `async def`: unittest only makes a coroutine of it and passes, and pytest without an async plugin does not run it".into(),
                ));
            }
            if yields(&f.body) {
                unit.risks.push((
                    "generator".into(),
                    "it now yields: unittest only makes a generator of it and passes".into(),
                ));
            }
            for d in &f.decorator_list {
                if let Err(why) = harmless_decorator(&d.expression) {
                    let text = snippet(self.src, d.start().to_usize(), d.end().to_usize());
                    unit.risks.push((
                        format!("decorator:{text}"),
                        format!("`{}` was added: {why}", shown(&text)),
                    ));
                }
            }
            for p in f.parameters.iter_non_variadic_params() {
                if p.default.is_some() {
                    let n = p.parameter.name.as_str();
                    unit.risks.push((
                        format!("default:{n}"),
                        format!(
                            "its parameter `{n}` now has a default, which pytest does not fill: the default replaces what the test is given"
                        ),
                    ));
                }
            }
        }
        let scope = self.scope.replace((start, end));
        self.block(&f.body, &None, &mut unit.asserts);
        self.scope.set(scope);
        // A later definition of the same name replaces the earlier one.
        self.units.retain(|u| u.id != unit.id);
        self.units.push(unit);
    }

    fn assertion(&self, node: &impl Ranged, kind: Kind, dead: &Option<String>) -> Assertion {
        let (s, e) = (node.start().to_usize(), node.end().to_usize());
        Assertion {
            text: snippet(self.src, s, e),
            line: self.lines.line(s),
            kind,
            dead: dead.clone(),
            callee: None,
            plain: false,
        }
    }

    /// A block's statements in order; after one that always ends it
    /// (`return`, `raise`, `continue`, `break`, a skip or an exit, directly
    /// or through a block that always runs) the rest is dead.
    fn block(&self, stmts: &[Stmt], dead: &Option<String>, out: &mut Vec<Assertion>) {
        let mut dead = dead.clone();
        for stmt in stmts {
            self.stmt(stmt, &dead, out);
            if dead.is_none()
                && let Some(why) = terminator(stmt)
            {
                let line = self.lines.line(stmt.start().to_usize());
                dead = Some(format!("it comes after {why} on line {line}"));
            }
        }
    }

    fn stmt(&self, stmt: &Stmt, dead: &Option<String>, out: &mut Vec<Assertion>) {
        let line = |n: &dyn Ranged| self.lines.line(n.start().to_usize());
        let or = |why: String| dead.clone().or(Some(why));
        match stmt {
            Stmt::Assert(a) => out.push(self.assertion(a, kind_of(self.src, &a.test), dead)),
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
                let body_dead = if falsy_constant(&f.iter) {
                    or(format!("its `for` on line {} loops over nothing", line(f)))
                } else {
                    dead.clone()
                };
                self.block(&f.body, &body_dead, out);
                self.block(&f.orelse, dead, out);
            }
            Stmt::With(w) => {
                let mut body_dead = dead.clone();
                let mut expecting: Vec<(Assertion, usize)> = Vec::new();
                for item in &w.items {
                    if let Expr::Call(c) = &item.context_expr {
                        let full = callee(c).map(|(full, _)| full);
                        let catching = c.arguments.args.iter().any(catches_failure);
                        let suppresses =
                            matches!(full.as_deref(), Some("contextlib.suppress" | "suppress"))
                                && catching;
                        if suppresses {
                            body_dead = or(format!(
                                "`suppress` on line {} swallows its failure",
                                line(c)
                            ));
                        } else if let Some(k) = call_kind(self.src, c, true) {
                            let a = self.assertion(c, k, dead);
                            if k == Kind::Raises && catching {
                                expecting.push((a, line(c) as usize));
                            } else {
                                out.push(a);
                            }
                        }
                    }
                }
                let mut inner = Vec::new();
                self.block(&w.body, &body_dead, &mut inner);
                // `with pytest.raises(AssertionError):` around assertions
                // passes only when they fail: both check nothing.
                let asserts_inside = inner.iter().any(|a| !a.plain && a.dead.is_none());
                for (mut a, at) in expecting {
                    if asserts_inside {
                        a.kind = Kind::Constant;
                        for x in inner.iter_mut().filter(|x| x.dead.is_none()) {
                            x.dead = Some(format!(
                                "the `with` on line {at} expects it to fail: it passes only when the assertion does not hold"
                            ));
                        }
                    }
                    out.push(a);
                }
                out.extend(inner);
            }
            Stmt::Try(t) => {
                let finally_ends = block_ends(&t.finalbody).map(|why| {
                    format!(
                        "the `finally` on line {} ends with {why}, which swallows its failure",
                        line(t)
                    )
                });
                let body_dead = match swallowing(&t.handlers) {
                    Some(at) => or(format!(
                        "the `except` on line {} swallows its failure",
                        self.lines.line(at)
                    )),
                    None => finally_ends.clone().map_or(dead.clone(), &or),
                };
                self.block(&t.body, &body_dead, out);
                let handler_dead = finally_ends.clone().map_or(dead.clone(), &or);
                for h in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = h;
                    self.block(&h.body, &handler_dead, out);
                }
                self.block(&t.orelse, &body_dead, out);
                self.block(&t.finalbody, dead, out);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    self.block(&case.body, dead, out);
                }
            }
            // A nested function's assertions are the unit's when the unit
            // calls it (or hands it on); one it never names again never
            // runs.
            Stmt::FunctionDef(f) => {
                let (s, e) = self.scope.get();
                let scope = self.src.get(s..e).unwrap_or_default();
                let nested_dead = if crate::units::used(scope, f.name.as_str()) {
                    dead.clone()
                } else {
                    or(format!(
                        "it is in `{}`, which is never called",
                        f.name.as_str()
                    ))
                };
                self.block(&f.body, &nested_dead, out)
            }
            Stmt::ClassDef(c) => self.block(&c.body, dead, out),
            _ => {}
        }
    }

    /// Assertion calls anywhere in an expression (`x = self.assertRaises(…)`,
    /// a call in a call's arguments).
    fn expr(&self, e: &Expr, dead: &Option<String>, out: &mut Vec<Assertion>) {
        if let Expr::Call(c) = e {
            if let Some(k) = call_kind(self.src, c, false) {
                let mut a = self.assertion(c, k, dead);
                a.callee = callee(c).map(|(_, last)| last);
                out.push(a);
                return;
            }
            // A call to a function the file may define: an assertion of
            // that function's strength when it has any (`check(x)`).
            if let Some((full, last)) = callee(c)
                && (full == last || full == format!("self.{last}") || full == format!("cls.{last}"))
            {
                let mut a = self.assertion(c, Kind::Constant, dead);
                a.callee = Some(last);
                a.plain = true;
                out.push(a);
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

/// A `unittest.TestCase` subclass: collected whatever its constructor.
fn test_case(c: &ruff_python_ast::StmtClassDef) -> bool {
    c.arguments.as_ref().is_some_and(|args| {
        args.args
            .iter()
            .any(|base| dotted(base).is_some_and(|n| n.ends_with("TestCase")))
    })
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

    /// The hostile review's bypasses (each a weakening the first version
    /// let through): every one is a finding now.
    #[test]
    fn the_reviewed_bypasses_are_found() {
        let long = "def test_r():\n    assert build_report(customer_identifier, start_date_of_period, end_date_of_period, include_archived_records=True, currency='EUR') == 'y'\n";
        let ut = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(), 3)\n";
        let helper = "def check(r):\n    assert r == 'y'\n\ndef test_c():\n    check(f())\n";
        let cases: Vec<(&str, String)> = vec![
            (long, long.replace("== 'y'", "== 'y' or True")),
            (BASE, format!("{BASE}\ndef test_name():\n    pass\n")),
            (BASE, BASE.replace("def test_name", "@pytest.fixture\ndef test_name")),
            (BASE, BASE.replace("class TestB:\n", "class TestB:\n    def __init__(self):\n        pass\n")),
            (BASE, BASE.replace("def test_name():", "@pytest.mark.parametrize('_', [])\ndef test_name(_):")),
            (BASE, BASE.replace("def test_name():", "@(lambda f: lambda: None)\ndef test_name():")),
            (ut, ut.replace("        self.assertEqual", "        if False:\n            yield\n        self.assertEqual")),
            (ut, ut.replace("def test_a", "async def test_a")),
            (BASE, BASE.replace("    assert x == 'y'", "    if True:\n        return\n    assert x == 'y'")),
            (BASE, BASE.replace("    assert x == 'y'", "    for _ in ():\n        assert x == 'y'")),
            (BASE, BASE.replace("    assert x == 'y'", "    if typing.TYPE_CHECKING:\n        assert x == 'y'")),
            (BASE, BASE.replace("    assert x == 'y'", "    if 0.0:\n        assert x == 'y'")),
            (BASE, BASE.replace("    assert x == 'y'", "    try:\n        assert x == 'y'\n    finally:\n        return")),
            (BASE, BASE.replace("    assert x == 'y'", "    try:\n        assert x == 'y'\n    except AssertionError:\n        return\n        raise")),
            (BASE, BASE.replace("    assert x == 'y'", "    with pytest.raises(AssertionError):\n        assert x == 'y'")),
            (BASE, BASE.replace("    assert x == 'y'", "    def check():\n        assert x == 'y'")),
            (BASE, BASE.replace("assert x == 'y'", "assert x == x")),
            (BASE, BASE.replace("assert x == 'y'", "assert 1 == 1")),
            (BASE, BASE.replace("assert x == 'y'", "assert x == mock.ANY")),
            (ut, ut.replace("self.assertEqual(f(), 3)", "self.assertEqual(1, 1)")),
            (BASE, BASE.replace("        with pytest.raises(ValueError):\n            g()\n", "        pytest.raises(ValueError)\n        g()\n")),
            (BASE, BASE.replace("assert x == 'y'", "assert_ok(x == 'y')") + "\ndef assert_ok(*a):\n    pass\n"),
            (BASE, BASE.replace("def test_name():", "def test_name(f=lambda a: 'y'):")),
            (helper, helper.replace("    check(f())", "    f()")),
            (BASE, BASE.replace("    x = f()\n", "    x = f()\n    sys.exit(0)\n")),
        ];
        for (i, (base, patched)) in cases.iter().enumerate() {
            let f = findings(base, patched);
            assert!(
                !f.is_empty(),
                "case {i} got through:\n{patched}\n{:#?}",
                parse(patched).unwrap().units
            );
        }
    }

    #[test]
    fn tests_defined_under_a_module_level_condition_are_judged() {
        let base = "import sys\nif sys.version_info >= (3, 8):\n    def test_a():\n        assert f() == 1\ntry:\n    import numpy\nexcept ImportError:\n    numpy = None\nelse:\n    class TestN:\n        def test_n(self):\n            assert numpy.zeros(1)[0] == 0\n";
        let weakened = base.replace("assert f() == 1", "assert f()");
        assert_eq!(
            findings(base, &weakened).len(),
            1,
            "{:?}",
            findings(base, &weakened)
        );
        let gone = base.replace("assert numpy.zeros(1)[0] == 0", "pass");
        assert_eq!(findings(base, &gone).len(), 1);
        // Moved under `if False:` at the top level: never defined.
        let hidden = base.replace("if sys.version_info >= (3, 8):", "if False:");
        assert!(
            findings(base, &hidden)
                .iter()
                .any(|m| m.contains("deleted or renamed away"))
        );
    }

    #[test]
    fn honest_changes_are_not_findings() {
        let cases: Vec<String> = vec![
            BASE.replace("def test_name():", "@pytest.mark.slow\ndef test_name():"),
            BASE.replace("def test_name():", "@mock.patch('a.b')\ndef test_name(m):"),
            BASE.replace(
                "def test_name():",
                "@pytest.mark.parametrize('v', [1, 2])\ndef test_name(v):",
            ),
            BASE.replace(
                "    x = f()\n",
                "    x = f()\n    if not x:\n        return\n",
            ),
            BASE.replace(
                "    assert x == 'y'",
                "    for v in [1, 2]:\n        assert x == 'y'",
            ),
            format!("{BASE}\ndef helper():\n    return 1\n"),
        ];
        for patched in cases {
            assert!(
                findings(BASE, &patched).is_empty(),
                "{patched}\n{:?}",
                findings(BASE, &patched)
            );
        }
    }
}
