//! JavaScript and TypeScript test files on oxc's syntax tree: `describe` /
//! `it` / `test` blocks (mocha, jest, vitest, node's test runner), their
//! assertions (jest/vitest `expect`, chai `expect`/`should`/`assert`, node
//! `assert`, supertest's `.expect(…)`) and whether each can still run.

use crate::units::{Assertion, Kind, Lines, Parsed, Unit, snippet};
use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, CallExpression, Expression, ExpressionStatement, IfStatement, Statement, TryStatement,
};
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, SourceType};

/// Parses `src` as the language `path` names; `Err` names the first
/// syntax error and its line.
pub fn parse(path: &str, src: &str) -> Result<Parsed, String> {
    let source_type = SourceType::from_path(path)
        .unwrap_or_default()
        // A `.js` test may hold JSX (React projects) and either module kind.
        .with_jsx(true);
    let alloc = Allocator::default();
    let ret = oxc_parser::Parser::new(&alloc, src, source_type).parse();
    let lines = Lines::new(src);
    if ret.panicked || ret.diagnostics.has_errors() {
        let first = ret.diagnostics.errors().next();
        let line = first
            .and_then(|e| e.labels.first().map(|l| l.offset()))
            .map(|o| lines.line(o as usize));
        let msg = first.map_or_else(|| "cannot parse".to_string(), |e| e.message.to_string());
        return Err(match line {
            Some(l) => format!("line {l}: {msg}"),
            None => msg,
        });
    }
    let mut w = Walker {
        src,
        lines,
        units: vec![Unit {
            id: "<outside any test>".into(),
            is_test: false,
            line: 1,
            asserts: Vec::new(),
            risks: Vec::new(),
        }],
        current: 0,
        titles: Vec::new(),
        dead: None,
    };
    w.visit_program(&ret.program);
    let mut units = w.units;
    crate::units::resolve_helpers(&mut units);
    // Two tests of one title in one block: the runner runs both; match
    // them in order (`title #2`).
    let mut seen: Vec<String> = Vec::new();
    for u in units.iter_mut() {
        let n = seen.iter().filter(|s| **s == u.id).count();
        seen.push(u.id.clone());
        if n > 0 {
            u.id = format!("{} #{}", u.id, n + 1);
        }
    }
    Ok(Parsed { units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
    units: Vec<Unit>,
    /// The unit assertions go to now.
    current: usize,
    /// Titles of the enclosing `describe` blocks.
    titles: Vec<String>,
    dead: Option<String>,
}

const SUITES: &[&str] = &[
    "describe",
    "context",
    "suite",
    "xdescribe",
    "fdescribe",
    "xcontext",
];
const TESTS: &[&str] = &["it", "test", "specify", "xit", "fit", "xtest", "xspecify"];

/// The name a call is made by, with its modifiers peeled off and kept:
/// `it.only(…)`, `test.each(table)(…)`, `describe.skip.each(…)(…)`,
/// `it?.skip(…)`, `it['skip'](…)`.
fn base_name<'a>(e: &'a Expression<'a>, mods: &mut Vec<&'a str>) -> Option<&'a str> {
    match e {
        Expression::Identifier(i) => Some(i.name.as_str()),
        Expression::StaticMemberExpression(m) => {
            mods.push(m.property.name.as_str());
            base_name(&m.object, mods)
        }
        Expression::ComputedMemberExpression(m) => {
            if let Expression::StringLiteral(s) = &m.expression {
                mods.push(s.value.as_str());
            }
            base_name(&m.object, mods)
        }
        Expression::CallExpression(c) => base_name(&c.callee, mods),
        Expression::TaggedTemplateExpression(t) => base_name(&t.tag, mods),
        Expression::ParenthesizedExpression(p) => base_name(&p.expression, mods),
        Expression::ChainExpression(c) => match &c.expression {
            oxc_ast::ast::ChainElement::CallExpression(call) => base_name(&call.callee, mods),
            oxc_ast::ast::ChainElement::StaticMemberExpression(m) => {
                mods.push(m.property.name.as_str());
                base_name(&m.object, mods)
            }
            _ => None,
        },
        _ => None,
    }
}

/// A title argument: a string or a template literal.
fn title(arg: Option<&Argument>) -> Option<String> {
    match arg? {
        Argument::StringLiteral(s) => Some(s.value.to_string()),
        Argument::TemplateLiteral(t) => Some(
            t.quasis
                .iter()
                .map(|q| q.value.raw.as_str())
                .collect::<Vec<_>>()
                .join("${}"),
        ),
        _ => None,
    }
}

/// The chain below a call or member: its member names, outermost first,
/// and its root (`expect(…)`'s callee name, or an identifier).
struct Chain<'a> {
    names: Vec<&'a str>,
    /// The root is a call to this name (`expect(x)`, `request(app)`).
    root_call: Option<&'a str>,
    /// The root is this identifier (`assert`, `should`).
    root_ident: Option<&'a str>,
}

fn chain<'a>(mut e: &'a Expression<'a>) -> Chain<'a> {
    let mut names = Vec::new();
    loop {
        match e {
            Expression::StaticMemberExpression(m) => {
                names.push(m.property.name.as_str());
                e = &m.object;
            }
            Expression::CallExpression(c) => match &c.callee {
                Expression::Identifier(i) => {
                    return Chain {
                        names,
                        root_call: Some(i.name.as_str()),
                        root_ident: None,
                    };
                }
                callee => e = callee,
            },
            Expression::ParenthesizedExpression(p) => e = &p.expression,
            Expression::AwaitExpression(a) => e = &a.argument,
            Expression::Identifier(i) => {
                return Chain {
                    names,
                    root_call: None,
                    root_ident: Some(i.name.as_str()),
                };
            }
            _ => {
                return Chain {
                    names,
                    root_call: None,
                    root_ident: None,
                };
            }
        }
    }
}

/// A jest/vitest or chai matcher (or chai property) by name.
fn matcher(name: &str) -> Option<Kind> {
    Some(match name {
        "toBe"
        | "toEqual"
        | "toStrictEqual"
        | "toBeNull"
        | "toBeUndefined"
        | "toBeNaN"
        | "toHaveBeenCalledWith"
        | "toHaveBeenLastCalledWith"
        | "toHaveBeenNthCalledWith"
        | "toBeCalledWith"
        | "lastCalledWith"
        | "nthCalledWith"
        | "toHaveReturnedWith"
        | "toHaveLastReturnedWith"
        | "toHaveNthReturnedWith"
        | "toReturnWith"
        | "equal"
        | "equals"
        | "eq"
        | "eql"
        | "eqls"
        | "true"
        | "false"
        | "null"
        | "undefined"
        | "NaN"
        | "status"
        | "calledWith"
        | "calledOnceWith"
        | "calledWithExactly"
        | "sameMembers"
        | "sameDeepMembers"
        | "rejectedWith"
        | "fulfilled"
        | "rejected"
        | "become" => Kind::Equality,
        "toThrow" | "toThrowError" | "throw" | "throws" | "Throw" => Kind::Raises,
        "toMatchSnapshot"
        | "toMatchInlineSnapshot"
        | "toThrowErrorMatchingSnapshot"
        | "toThrowErrorMatchingInlineSnapshot"
        | "toMatchFileSnapshot"
        | "matchSnapshot" => Kind::Snapshot,
        "toBeGreaterThan"
        | "toBeGreaterThanOrEqual"
        | "toBeLessThan"
        | "toBeLessThanOrEqual"
        | "toBeCloseTo"
        | "toHaveBeenCalledTimes"
        | "toBeCalledTimes"
        | "toHaveReturnedTimes"
        | "toHaveLength"
        | "above"
        | "below"
        | "least"
        | "most"
        | "within"
        | "greaterThan"
        | "lessThan"
        | "gt"
        | "gte"
        | "lt"
        | "lte"
        | "closeTo"
        | "approximately"
        | "lengthOf"
        | "length"
        | "callCount"
        | "calledOnce"
        | "calledTwice"
        | "satisfy"
        | "satisfies" => Kind::Comparison,
        "toContain" | "toContainEqual" | "toMatch" | "toMatchObject" | "toHaveProperty"
        | "include" | "includes" | "contain" | "contains" | "match" | "matches" | "property"
        | "ownProperty" | "haveOwnProperty" | "keys" | "key" | "members" | "string" | "oneOf"
        | "header" | "toHaveClass" | "toHaveTextContent" | "toHaveAttribute" => Kind::Containment,
        "toBeInstanceOf" | "toBeTypeOf" | "instanceOf" | "instanceof" | "a" | "an" => Kind::Type,
        "toBeTruthy" | "toBeFalsy" | "ok" | "toHaveBeenCalled" | "toBeCalled" | "called"
        | "exist" | "empty" | "toBeInTheDocument" | "toBeVisible" => Kind::Truthiness,
        "toBeDefined" => Kind::Defined,
        _ => return None,
    })
}

/// node `assert.X` and chai `assert.X`.
fn assert_method(name: &str) -> Kind {
    match name {
        "equal" | "strictEqual" | "deepEqual" | "deepStrictEqual" | "isTrue" | "isFalse"
        | "isNull" | "isUndefined" | "isNaN" | "sameMembers" | "sameDeepMembers"
        | "sameOrderedMembers" | "propertyVal" | "deepPropertyVal" | "equals" => Kind::Equality,
        "throws" | "rejects" | "throw" | "Throw" | "isRejected" => Kind::Raises,
        "fail" => Kind::Fail,
        "ok" | "isOk" | "isNotOk" | "doesNotThrow" | "doesNotReject" | "isEmpty" | "isNotEmpty"
        | "exists" | "notExists" | "ifError" => Kind::Truthiness,
        "isNotNull" | "isDefined" | "isNotUndefined" => Kind::Defined,
        "include" | "notInclude" | "deepInclude" | "includeMembers" | "property"
        | "notProperty" | "match" | "doesNotMatch" | "notMatch" | "hasAllKeys" | "hasAnyKeys"
        | "containsAllKeys" | "oneOf" => Kind::Containment,
        "instanceOf" | "notInstanceOf" | "typeOf" | "notTypeOf" | "isString" | "isNumber"
        | "isArray" | "isObject" | "isFunction" | "isBoolean" => Kind::Type,
        _ => Kind::Comparison,
    }
}

/// A negated check pins down less: `not.toBe(x)` is a comparison,
/// `not.toBeNull()` a defined check.
fn negated(k: Kind, name: &str) -> Kind {
    match (k, name) {
        (_, "toBeNull" | "toBeUndefined" | "null" | "undefined") => Kind::Defined,
        (_, "toThrow" | "toThrowError" | "throw" | "throws" | "Throw") => Kind::Truthiness,
        (Kind::Equality | Kind::Snapshot | Kind::Raises, _) => Kind::Comparison,
        (Kind::Defined, _) => Kind::Truthiness,
        (k, _) => k,
    }
}

/// A literal argument (`1`, `'a'`, `true`, `null`).
fn arg_literal(a: &Argument) -> bool {
    a.as_expression()
        .is_some_and(|e| e.without_parentheses().is_literal())
}

/// `expect(x).matcher(y)` made a constant when it cannot fail: a literal
/// under test (`expect(true).toBe(true)`), the same expression on both
/// sides, or a wildcard expected (`expect.anything()`, `expect.any(T)`).
fn expect_strength(src: &str, call: &CallExpression, object: &Expression, k: Kind) -> Kind {
    let mut e = object;
    let actual = loop {
        match e {
            Expression::StaticMemberExpression(m) => e = &m.object,
            Expression::CallExpression(c) if matches!(&c.callee, Expression::Identifier(i) if i.name == "expect") =>
            {
                break c.arguments.first();
            }
            Expression::CallExpression(c) => e = &c.callee,
            _ => break None,
        }
    };
    let text = |a: &Argument| snippet(src, a.span().start as usize, a.span().end as usize);
    match (actual, call.arguments.first()) {
        (Some(a), _) if arg_literal(a) => Kind::Constant,
        (Some(a), Some(b)) if text(a) == text(b) => Kind::Constant,
        (_, Some(b)) if text(b).starts_with("expect.anything(") => Kind::Constant,
        (_, Some(b))
            if text(b).starts_with("expect.any(") && k.tier() > crate::units::Tier::Comparison =>
        {
            Kind::Type
        }
        _ => k,
    }
}

/// What a call checks, when it is an assertion.
fn call_kind(src: &str, call: &CallExpression) -> Option<Kind> {
    match &call.callee {
        // `assert(x)`.
        Expression::Identifier(i) if i.name == "assert" => {
            return Some(match call.arguments.first() {
                Some(a) if a.is_expression() && a.to_expression().is_literal() => Kind::Constant,
                _ => Kind::Truthiness,
            });
        }
        Expression::StaticMemberExpression(m) => {
            let name = m.property.name.as_str();
            let below = chain(&m.object);
            let not = below.names.contains(&"not");
            match (below.root_call, below.root_ident) {
                (Some("expect"), _) => {
                    let k = matcher(name).unwrap_or(Kind::Comparison);
                    let k = if not { negated(k, name) } else { k };
                    return Some(expect_strength(src, call, &m.object, k));
                }
                (_, Some("assert")) if below.names.is_empty() => {
                    let k = assert_method(name);
                    let args: Vec<&Argument> = call.arguments.iter().collect();
                    let same = match args.as_slice() {
                        [a, b, ..] => {
                            (arg_literal(a) && arg_literal(b))
                                || snippet(src, a.span().start as usize, a.span().end as usize)
                                    == snippet(src, b.span().start as usize, b.span().end as usize)
                        }
                        [a] => arg_literal(a) && k.tier() <= crate::units::Tier::Truthiness,
                        _ => false,
                    };
                    return Some(if same { Kind::Constant } else { k });
                }
                // should.js / chai `should`: `x.should.equal(y)`.
                _ if below.names.contains(&"should") => {
                    let k = matcher(name).unwrap_or(Kind::Comparison);
                    return Some(if not { negated(k, name) } else { k });
                }
                // supertest: `request(app).get('/').expect(200)`, on a
                // request a call or a name makes (not an object literal).
                (Some(_), _) | (_, Some(_)) if name == "expect" => return Some(supertest(call)),
                _ => {}
            }
        }
        _ => {}
    }
    None
}

/// supertest's `.expect(status)`, `.expect(field, value)`, `.expect(body)`,
/// `.expect(fn)`.
fn supertest(call: &CallExpression) -> Kind {
    let args: Vec<&Argument> = call
        .arguments
        .iter()
        .filter(|a| !matches!(a, Argument::Identifier(i) if i.name == "done"))
        .collect();
    match args.as_slice() {
        [] => Kind::Constant,
        [Argument::NumericLiteral(_), ..] => Kind::Equality,
        [Argument::StringLiteral(_), Argument::RegExpLiteral(_)] => Kind::Containment,
        [Argument::StringLiteral(_), _] => Kind::Equality,
        [Argument::RegExpLiteral(_), ..] => Kind::Containment,
        [
            Argument::ArrowFunctionExpression(_) | Argument::FunctionExpression(_),
            ..,
        ] => Kind::Comparison,
        _ => Kind::Equality,
    }
}

/// A chai property assertion ending a statement: `expect(x).to.be.true;`.
fn property_kind(e: &Expression) -> Option<Kind> {
    let Expression::StaticMemberExpression(m) = e else {
        return None;
    };
    let name = m.property.name.as_str();
    let below = chain(&m.object);
    let rooted = below.root_call == Some("expect") || below.names.contains(&"should");
    if !rooted {
        return None;
    }
    // Only chai's property assertions: `expect(x).toBe;` (never called)
    // checks nothing.
    if !CHAI_PROPERTIES.contains(&name) {
        return None;
    }
    let k = matcher(name)?;
    let not = below.names.contains(&"not");
    Some(if not { negated(k, name) } else { k })
}

/// chai's assertions made by reading a property.
const CHAI_PROPERTIES: &[&str] = &[
    "true",
    "false",
    "null",
    "undefined",
    "NaN",
    "ok",
    "exist",
    "empty",
    "called",
    "calledOnce",
    "calledTwice",
    "fulfilled",
    "rejected",
];

fn falsy(e: &Expression) -> bool {
    match e.without_parentheses() {
        Expression::BooleanLiteral(b) => !b.value,
        Expression::NullLiteral(_) => true,
        Expression::NumericLiteral(n) => n.value == 0.0,
        Expression::StringLiteral(s) => s.value.is_empty(),
        Expression::Identifier(i) => i.name == "undefined" || i.name == "NaN",
        Expression::BigIntLiteral(b) => b.value.trim_start_matches('0').is_empty(),
        Expression::UnaryExpression(u) if u.operator.as_str() == "void" => true,
        Expression::UnaryExpression(u) if u.operator.as_str() == "!" => truthy(&u.argument),
        Expression::LogicalExpression(l) if l.operator.as_str() == "&&" => {
            falsy(&l.left) || falsy(&l.right)
        }
        Expression::LogicalExpression(l) if l.operator.as_str() == "||" => {
            falsy(&l.left) && falsy(&l.right)
        }
        _ => false,
    }
}

fn truthy(e: &Expression) -> bool {
    match e.without_parentheses() {
        Expression::BooleanLiteral(b) => b.value,
        Expression::NumericLiteral(n) => n.value != 0.0 && !n.value.is_nan(),
        Expression::StringLiteral(s) => !s.value.is_empty(),
        Expression::UnaryExpression(u) if u.operator.as_str() == "!" => falsy(&u.argument),
        Expression::ArrayExpression(_) | Expression::ObjectExpression(_) => true,
        Expression::LogicalExpression(l) if l.operator.as_str() == "||" => {
            truthy(&l.left) || truthy(&l.right)
        }
        _ => false,
    }
}

/// What ends a block for good when this statement runs: `return`,
/// `throw`, `continue`, `break`, a skip, an exit, or a block that always
/// runs and always ends.
fn terminator(stmt: &Statement) -> Option<&'static str> {
    match stmt {
        Statement::ReturnStatement(_) => Some("`return`"),
        Statement::ThrowStatement(_) => Some("`throw`"),
        Statement::ContinueStatement(_) => Some("`continue`"),
        Statement::BreakStatement(_) => Some("`break`"),
        Statement::BlockStatement(b) => b.body.iter().find_map(terminator),
        Statement::IfStatement(i) => {
            let then = terminator(&i.consequent);
            if truthy(&i.test) {
                return then;
            }
            match &i.alternate {
                Some(alt) if then.is_some() && terminator(alt).is_some() => then,
                _ => None,
            }
        }
        Statement::TryStatement(t) => t
            .finalizer
            .as_ref()
            .and_then(|f| f.body.iter().find_map(terminator)),
        Statement::ExpressionStatement(e) => match e.expression.without_parentheses() {
            Expression::CallExpression(c) => {
                let mut mods = Vec::new();
                let name = base_name(&c.callee, &mut mods);
                match (name, mods.first()) {
                    // `this.skip()`, `ctx.skip()`, `skip()`: the test stops
                    // here. `it.skip('title', fn)` registers a test (a
                    // marker `disable` reads), and stops nothing after it.
                    (Some("skip"), None) | (_, Some(&"skip")) if c.arguments.is_empty() => {
                        Some("a skip")
                    }
                    (Some("process"), Some(&"exit" | &"abort")) => Some("an exit"),
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// A `catch` that does not throw again before anything else ends it.
fn rethrows(stmts: &[Statement]) -> bool {
    matches!(
        stmts.iter().find(|s| terminator(s).is_some()),
        Some(Statement::ThrowStatement(_))
    )
}

impl Walker<'_> {
    fn push(&mut self, span: oxc_span::Span, kind: Kind) {
        let (s, e) = (span.start as usize, span.end as usize);
        let a = Assertion {
            text: snippet(self.src, s, e),
            line: self.lines.line(s),
            kind,
            dead: self.dead.clone(),
            callee: None,
            plain: false,
        };
        self.units[self.current].asserts.push(a);
    }

    fn with_dead(&mut self, why: Option<String>, f: impl FnOnce(&mut Self)) {
        let saved = self.dead.clone();
        if self.dead.is_none() {
            self.dead = why;
        }
        f(self);
        self.dead = saved;
    }

    fn line(&self, offset: u32) -> u32 {
        self.lines.line(offset as usize)
    }

    /// A function the file defines outside any test: a unit of its own,
    /// so a test that calls it has its assertions.
    fn helper(&mut self, name: String, at: u32, walk: impl FnOnce(&mut Self)) {
        self.units.retain(|u| u.id != name || u.is_test);
        self.units.push(Unit {
            id: name,
            is_test: false,
            line: self.line(at),
            asserts: Vec::new(),
            risks: Vec::new(),
        });
        let unit = self.units.len() - 1;
        let saved = self.current;
        self.current = unit;
        walk(self);
        self.current = saved;
    }
}

/// A function argument (a test's or a hook's callback).
fn callback<'a, 'b>(
    args: &'b [Argument<'a>],
) -> Option<&'b oxc_allocator::Box<'a, oxc_ast::ast::FormalParameters<'a>>> {
    args.iter().find_map(|a| match a {
        Argument::FunctionExpression(f) => Some(&f.params),
        Argument::ArrowFunctionExpression(f) => Some(&f.params),
        _ => None,
    })
}

impl<'a> Visit<'a> for Walker<'_> {
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        let mut mods = Vec::new();
        let name = base_name(&it.callee, &mut mods);
        let titled = title(it.arguments.first());
        if let (Some(name), Some(t)) = (name, titled.as_ref()) {
            if SUITES.contains(&name) {
                self.titles.push(t.clone());
                walk::walk_call_expression(self, it);
                self.titles.pop();
                return;
            }
            if TESTS.contains(&name) && !self.units[self.current].is_test {
                let mut id = self.titles.join(" > ");
                if !id.is_empty() {
                    id.push_str(" > ");
                }
                id.push_str(t);
                let mut risks = Vec::new();
                if mods.contains(&"only") {
                    risks.push((
                        "only".into(),
                        "it is focused (`only`), so no other test runs".into(),
                    ));
                }
                if let Some(params) = callback(&it.arguments)
                    && params.items.iter().any(|p| p.initializer.is_some())
                {
                    risks.push((
                        "default".into(),
                        "its callback now has a parameter with a default, which can shadow what it asserts with".into(),
                    ));
                }
                // Registered where it never runs, or with a modifier that
                // does not run it: not collected.
                let collected =
                    self.dead.is_none() && !mods.iter().any(|m| matches!(*m, "skip" | "todo"));
                self.units.push(Unit {
                    id,
                    is_test: collected,
                    line: self.line(it.span.start),
                    asserts: Vec::new(),
                    risks,
                });
                let saved = self.current;
                self.current = self.units.len() - 1;
                walk::walk_call_expression(self, it);
                self.current = saved;
                return;
            }
        }
        let mark = self.units[self.current].asserts.len();
        if let Some(k) = call_kind(self.src, it) {
            self.push(it.span, k);
        } else if let Expression::Identifier(f) = &it.callee {
            // A call to a function the file may define (`check(res)`): an
            // assertion of that function's strength when it has any.
            self.push(it.span, Kind::Constant);
            let a = self.units[self.current]
                .asserts
                .last_mut()
                .expect("just pushed");
            a.callee = Some(f.name.to_string());
            a.plain = true;
        }
        let pushed = self.units[self.current].asserts.len() > mark;
        // A function handed to `expect(…)` or `assert.throws(…)` runs as
        // the value under test: a failing assertion in it is what the
        // matcher may expect.
        let under_test = matches!(&it.callee, Expression::Identifier(i) if i.name == "expect")
            || matches!(&it.callee, Expression::StaticMemberExpression(m)
                if matches!(&m.object, Expression::Identifier(i) if i.name == "assert")
                && matches!(m.property.name.as_str(), "throws" | "rejects" | "doesNotThrow" | "doesNotReject"));
        if under_test {
            let line = self.line(it.span.start);
            self.visit_expression(&it.callee);
            for a in &it.arguments {
                let function = matches!(
                    a,
                    Argument::ArrowFunctionExpression(_) | Argument::FunctionExpression(_)
                );
                let why = function.then(|| {
                    format!("it is inside the value under test of the assertion on line {line}")
                });
                self.with_dead(why, |w| w.visit_argument(a));
            }
            return;
        }
        walk::walk_call_expression(self, it);
        // `expect(() => { assert… }).toThrow()` passes only when the
        // assertions in it fail: the matcher checks nothing then.
        if pushed {
            let unit = &mut self.units[self.current];
            let inverted = unit.asserts[mark + 1..].iter().any(|a| {
                !a.plain
                    && a.dead
                        .as_deref()
                        .is_some_and(|d| d.starts_with("it is inside the value under test"))
            });
            if inverted && self.dead.is_none() {
                unit.asserts[mark].kind = Kind::Constant;
            }
        }
    }

    fn visit_expression_statement(&mut self, it: &ExpressionStatement<'a>) {
        if let Some(k) = property_kind(&it.expression) {
            self.push(it.expression.span(), k);
        }
        // An assertion on a promise, or a supertest request, as a statement
        // of its own (neither awaited nor returned): nothing waits for it.
        let mut why = None;
        if let Expression::CallExpression(c) = it.expression.without_parentheses() {
            let ch = chain(&c.callee);
            let line = self.line(it.span.start);
            let text = snippet(self.src, it.span.start as usize, it.span.end as usize);
            if ch.root_call == Some("expect")
                && ch
                    .names
                    .iter()
                    .any(|n| matches!(*n, "resolves" | "rejects" | "eventually"))
            {
                why = Some(format!(
                    "the promise assertion on line {line} is neither awaited nor returned"
                ));
            } else if ch.root_call != Some("expect")
                && (ch.names.contains(&"expect")
                    || matches!(&c.callee, Expression::StaticMemberExpression(m) if m.property.name == "expect"))
                && !text.contains(".end(")
                && !text.contains("done")
                && !text.contains(".then(")
            {
                why = Some(format!(
                    "the request on line {line} is neither awaited, returned nor ended, so it is never sent"
                ));
            }
        }
        self.with_dead(why, |w| walk::walk_expression_statement(w, it));
    }

    fn visit_statements(&mut self, it: &oxc_allocator::Vec<'a, Statement<'a>>) {
        let saved = self.dead.clone();
        for stmt in it {
            self.visit_statement(stmt);
            if self.dead.is_none()
                && let Some(why) = terminator(stmt)
            {
                let line = self.line(stmt.span().start);
                self.dead = Some(format!("it comes after {why} on line {line}"));
            }
        }
        self.dead = saved;
    }

    fn visit_if_statement(&mut self, it: &IfStatement<'a>) {
        self.visit_expression(&it.test);
        let line = self.line(it.span.start);
        let never = falsy(&it.test)
            .then(|| format!("it is under `if` with a false condition on line {line}"));
        self.with_dead(never, |w| w.visit_statement(&it.consequent));
        if let Some(alt) = &it.alternate {
            let always = truthy(&it.test)
                .then(|| format!("the `if` on line {line} always takes its first branch"));
            self.with_dead(always, |w| w.visit_statement(alt));
        }
    }

    fn visit_while_statement(&mut self, it: &oxc_ast::ast::WhileStatement<'a>) {
        self.visit_expression(&it.test);
        let line = self.line(it.span.start);
        let never = falsy(&it.test)
            .then(|| format!("it is under `while` with a false condition on line {line}"));
        self.with_dead(never, |w| w.visit_statement(&it.body));
    }

    fn visit_for_of_statement(&mut self, it: &oxc_ast::ast::ForOfStatement<'a>) {
        self.visit_expression(&it.right);
        let line = self.line(it.span.start);
        let empty = matches!(it.right.without_parentheses(), Expression::ArrayExpression(a) if a.elements.is_empty())
            .then(|| format!("its `for` on line {line} loops over nothing"));
        self.with_dead(empty, |w| w.visit_statement(&it.body));
    }

    fn visit_logical_expression(&mut self, it: &oxc_ast::ast::LogicalExpression<'a>) {
        self.visit_expression(&it.left);
        let line = self.line(it.span.start);
        let skipped = match it.operator.as_str() {
            "&&" => falsy(&it.left),
            "||" => truthy(&it.left),
            _ => false,
        }
        .then(|| {
            format!(
                "the `{}` on line {line} never evaluates it",
                it.operator.as_str()
            )
        });
        self.with_dead(skipped, |w| w.visit_expression(&it.right));
    }

    fn visit_conditional_expression(&mut self, it: &oxc_ast::ast::ConditionalExpression<'a>) {
        self.visit_expression(&it.test);
        let line = self.line(it.span.start);
        let why =
            |b: bool| b.then(|| format!("the condition on line {line} never takes this branch"));
        self.with_dead(why(falsy(&it.test)), |w| w.visit_expression(&it.consequent));
        self.with_dead(why(truthy(&it.test)), |w| w.visit_expression(&it.alternate));
    }

    fn visit_variable_declarator(&mut self, it: &oxc_ast::ast::VariableDeclarator<'a>) {
        // A function kept in a name that is never used again never runs.
        if let (oxc_ast::ast::BindingPattern::BindingIdentifier(id), Some(init)) =
            (&it.id, &it.init)
            && matches!(
                init.without_parentheses(),
                Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
            )
            && !crate::units::used(self.src, id.name.as_str())
        {
            let why = format!("it is in `{}`, which is never called", id.name.as_str());
            self.with_dead(Some(why), |w| walk::walk_variable_declarator(w, it));
            return;
        }
        if let (oxc_ast::ast::BindingPattern::BindingIdentifier(id), Some(init)) =
            (&it.id, &it.init)
            && matches!(
                init.without_parentheses(),
                Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
            )
            && self.current == 0
        {
            let name = id.name.to_string();
            self.helper(name, it.span.start, |w| {
                walk::walk_variable_declarator(w, it)
            });
            return;
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_function(
        &mut self,
        it: &oxc_ast::ast::Function<'a>,
        flags: oxc_syntax::scope::ScopeFlags,
    ) {
        if let Some(id) = &it.id
            && it.r#type == oxc_ast::ast::FunctionType::FunctionDeclaration
            && !crate::units::used(self.src, id.name.as_str())
        {
            let why = format!("it is in `{}`, which is never called", id.name.as_str());
            self.with_dead(Some(why), |w| walk::walk_function(w, it, flags));
            return;
        }
        if let Some(id) = &it.id
            && it.r#type == oxc_ast::ast::FunctionType::FunctionDeclaration
            && self.current == 0
        {
            let name = id.name.to_string();
            self.helper(name, it.span.start, |w| walk::walk_function(w, it, flags));
            return;
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_try_statement(&mut self, it: &TryStatement<'a>) {
        let finally_ends = it
            .finalizer
            .as_ref()
            .and_then(|f| f.body.iter().find_map(terminator))
            .map(|why| {
                format!(
                    "the `finally` on line {} ends with {why}, which swallows its failure",
                    self.line(it.span.start)
                )
            });
        let swallowed = it
            .handler
            .as_ref()
            .and_then(|h| {
                (!rethrows(&h.body.body)).then(|| {
                    format!(
                        "the `catch` on line {} swallows its failure",
                        self.line(h.span.start)
                    )
                })
            })
            .or(finally_ends.clone());
        self.with_dead(swallowed, |w| w.visit_block_statement(&it.block));
        if let Some(h) = &it.handler {
            self.with_dead(finally_ends, |w| w.visit_catch_clause(h));
        }
        if let Some(f) = &it.finalizer {
            self.visit_block_statement(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::judge;

    fn findings(base: &str, patched: &str) -> Vec<String> {
        judge(
            &parse("test/a.test.js", base).unwrap(),
            &parse("test/a.test.js", patched).unwrap(),
        )
        .into_iter()
        .map(|(_, m)| m)
        .collect()
    }

    const MOCHA: &str = "const request = require('supertest');\nconst assert = require('assert');\ndescribe('app', function () {\n  it('gets /', function (done) {\n    request(app).get('/').expect(200, done);\n  });\n  it('adds', function () {\n    assert.strictEqual(add(1, 2), 3);\n  });\n});\n";

    #[test]
    fn a_supertest_expect_removed_is_found() {
        let patched = MOCHA.replace(".expect(200, done)", ".end(done)");
        let f = findings(MOCHA, &patched);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("test `app > gets /`"), "{f:?}");
        assert!(f[0].contains("was removed"), "{f:?}");
    }

    #[test]
    fn vacuous_replacements_are_weaker() {
        for weak in [
            "assert.ok(add(1, 2))",
            "assert(add(1, 2))",
            "expect(add(1, 2)).toBeDefined()",
            "expect(add(1, 2)).to.be.ok",
        ] {
            let patched = MOCHA.replace("assert.strictEqual(add(1, 2), 3)", weak);
            let f = findings(MOCHA, &patched);
            assert_eq!(f.len(), 1, "{weak}: {f:?}");
            assert!(f[0].contains("weaker"), "{weak}: {f:?}");
        }
        for same in [
            "expect(add(1, 2)).toBe(3)",
            "expect(add(1, 2)).to.equal(3)",
            "add(1, 2).should.equal(3)",
        ] {
            let patched = MOCHA.replace("assert.strictEqual(add(1, 2), 3)", same);
            assert!(findings(MOCHA, &patched).is_empty(), "{same}");
        }
    }

    #[test]
    fn an_assertion_removed_beside_an_added_test_is_found() {
        let patched = MOCHA
            .replace("    assert.strictEqual(add(1, 2), 3);\n", "")
            .replace(
                "\n});\n",
                "\n  it('more', () => { expect(1).toBe(1); expect(2).toBe(2); });\n});\n",
            );
        let f = findings(MOCHA, &patched);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("test `app > adds`"), "{f:?}");
    }

    #[test]
    fn an_early_return_if_false_and_a_swallowing_catch_make_assertions_dead() {
        for patched in [
            MOCHA.replace(
                "    assert.strictEqual",
                "    return;\n    assert.strictEqual",
            ),
            MOCHA.replace(
                "    assert.strictEqual(add(1, 2), 3);",
                "    if (false) { assert.strictEqual(add(1, 2), 3); }",
            ),
            MOCHA.replace(
                "    assert.strictEqual(add(1, 2), 3);",
                "    try { assert.strictEqual(add(1, 2), 3); } catch (e) {}",
            ),
        ] {
            let f = findings(MOCHA, &patched);
            assert_eq!(f.len(), 1, "{patched}\n{f:?}");
            assert!(f[0].contains("can no longer fail"), "{f:?}");
        }
    }

    #[test]
    fn a_renamed_test_and_typescript_parse() {
        let patched = MOCHA.replace("it('adds'", "it('adds numbers'");
        let f = findings(MOCHA, &patched);
        assert!(
            f.iter()
                .any(|m| m.contains("`app > adds`") && m.contains("deleted or renamed away")),
            "{f:?}"
        );
        let ts = "import { expect, test } from 'vitest';\ntest('t', () => { const x: number = f(); expect(x).toBe(1); });\n";
        let p = parse("src/a.test.ts", ts).unwrap();
        assert_eq!(p.units[1].asserts.len(), 1, "{:?}", p.units);
        assert!(parse("a.test.js", "it('x', () => {").is_err());
    }

    /// The hostile review's bypasses: every one is a finding now.
    #[test]
    fn the_reviewed_bypasses_are_found() {
        let a = "    assert.strictEqual(add(1, 2), 3);";
        let cases: Vec<String> = vec![
            MOCHA.replace(a, &format!("    {{ return; }}\n{a}")),
            MOCHA.replace(a, &format!("    if (true) return;\n{a}")),
            MOCHA.replace(a, "    if (void 0) { assert.strictEqual(add(1, 2), 3); }"),
            MOCHA.replace(a, "    if (NaN) { assert.strictEqual(add(1, 2), 3); }"),
            MOCHA.replace(a, "    while (false) { assert.strictEqual(add(1, 2), 3); }"),
            MOCHA.replace(
                a,
                "    for (const _ of []) { assert.strictEqual(add(1, 2), 3); }",
            ),
            MOCHA.replace(a, "    false && assert.strictEqual(add(1, 2), 3);"),
            MOCHA.replace(
                a,
                "    try { assert.strictEqual(add(1, 2), 3); } finally { return; }",
            ),
            MOCHA.replace(
                a,
                "    try { assert.strictEqual(add(1, 2), 3); } catch (e) { return; throw e; }",
            ),
            MOCHA.replace(
                a,
                "    expect(() => assert.strictEqual(add(1, 2), 3)).toThrow();",
            ),
            MOCHA.replace(
                a,
                "    const check = () => { assert.strictEqual(add(1, 2), 3); };",
            ),
            MOCHA.replace(a, "    expect(true).toBe(true);"),
            MOCHA.replace(a, "    expect(add(1, 2)).toEqual(expect.anything());"),
            MOCHA.replace(a, "    assert.strictEqual(1, 1);"),
            MOCHA.replace(a, "    expect(add(1, 2)).toBe;"),
            MOCHA.replace(a, "    ({ expect() {} }).expect(200);"),
            MOCHA.replace(
                "request(app).get('/').expect(200, done);",
                "request(app).get('/').expect(200); done();",
            ),
            MOCHA.replace("it('adds'", "it?.skip('adds'"),
            MOCHA.replace("it('adds'", "it?.only('adds'"),
            MOCHA.replace(
                "function () {\n    assert",
                "function (assert = { strictEqual() {} }) {\n    assert",
            ),
            format!("const later = () => {{\n{MOCHA}}};\n"),
            MOCHA.replace(a, &format!("    process.exit(0);\n{a}")),
        ];
        for (i, patched) in cases.iter().enumerate() {
            let f = findings(MOCHA, patched);
            assert!(!f.is_empty(), "case {i} got through:\n{patched}");
        }
        // Promise assertions: awaited at the base, not now.
        let base = "test('p', async () => {\n  await expect(p()).resolves.toBe(3);\n});\n";
        let patched = base.replace("await expect", "expect");
        assert!(!findings(base, &patched).is_empty());
    }

    #[test]
    fn a_helpers_assertions_count_where_it_is_called() {
        let base = "function check(r) {\n  assert.strictEqual(r, 3);\n}\ndescribe('d', () => {\n  it('c', () => {\n    check(add(1, 2));\n  });\n});\n";
        let dropped = base.replace("    check(add(1, 2));\n", "    add(1, 2);\n");
        assert_eq!(
            findings(base, &dropped).len(),
            1,
            "{:?}",
            findings(base, &dropped)
        );
        // Tests a function registers are tests, wherever it is called.
        let shared = "function shared() {\n  it('s', () => { expect(f()).toBe(1); });\n}\ndescribe('d', () => { shared(); });\n";
        let emptied = shared.replace("expect(f()).toBe(1);", "");
        assert_eq!(findings(shared, &emptied).len(), 1);
    }

    #[test]
    fn a_skipped_test_stops_nothing_after_it() {
        let base = "describe('d', () => {\n  it.skip('later', () => {});\n  it('a', () => { expect(f()).toBe(1); });\n});\n";
        let p = parse("t.test.js", base).unwrap();
        let a = p.units.iter().find(|u| u.id == "d > a").unwrap();
        assert!(a.is_test && a.asserts[0].dead.is_none(), "{:?}", p.units);
        // `this.skip()` in a test ends that test.
        let stopped = base.replace("it('a', () => {", "it('a', function () { this.skip();");
        assert!(!findings(base, &stopped).is_empty());
    }

    #[test]
    fn honest_changes_are_not_findings() {
        let a = "assert.strictEqual(add(1, 2), 3)";
        for patched in [
            MOCHA.replace(a, "expect(add(1, 2)).to.equal(3)"),
            MOCHA.replace(a, "assert.deepStrictEqual(add(1, 2), 3)"),
            MOCHA.replace(".expect(200, done)", ".expect(200).end(done)"),
            MOCHA.replace(
                "  it('adds'",
                "  it('more', () => { expect(sub(3, 1)).toBe(2); });\n  it('adds'",
            ),
        ] {
            let f = findings(MOCHA, &patched);
            assert!(f.is_empty(), "{patched}\n{f:?}");
        }
    }
}
