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
        }],
        current: 0,
        titles: Vec::new(),
        dead: None,
    };
    w.visit_program(&ret.program);
    let mut units = w.units;
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

/// The name a call is made by, with its modifiers peeled off:
/// `it.only(…)`, `test.each(table)(…)`, `describe.skip.each(…)(…)`.
fn base_name<'a>(e: &'a Expression<'a>) -> Option<&'a str> {
    match e {
        Expression::Identifier(i) => Some(i.name.as_str()),
        Expression::StaticMemberExpression(m) => base_name(&m.object),
        Expression::CallExpression(c) => base_name(&c.callee),
        Expression::TaggedTemplateExpression(t) => base_name(&t.tag),
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

/// What a call checks, when it is an assertion.
fn call_kind(call: &CallExpression) -> Option<Kind> {
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
                    return Some(if not { negated(k, name) } else { k });
                }
                (_, Some("assert")) if below.names.is_empty() => return Some(assert_method(name)),
                // should.js / chai `should`: `x.should.equal(y)`.
                _ if below.names.contains(&"should") => {
                    let k = matcher(name).unwrap_or(Kind::Comparison);
                    return Some(if not { negated(k, name) } else { k });
                }
                // supertest: `request(app).get('/').expect(200)`.
                _ if name == "expect" => return Some(supertest(call)),
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
    let k = matcher(name)?;
    let not = below.names.contains(&"not");
    Some(if not { negated(k, name) } else { k })
}

fn falsy(e: &Expression) -> bool {
    match e.without_parentheses() {
        Expression::BooleanLiteral(b) => !b.value,
        Expression::NullLiteral(_) => true,
        Expression::NumericLiteral(n) => n.value == 0.0,
        Expression::StringLiteral(s) => s.value.is_empty(),
        Expression::Identifier(i) => i.name == "undefined",
        Expression::UnaryExpression(u) if u.operator.as_str() == "!" => truthy(&u.argument),
        _ => false,
    }
}

fn truthy(e: &Expression) -> bool {
    match e.without_parentheses() {
        Expression::BooleanLiteral(b) => b.value,
        Expression::NumericLiteral(n) => n.value != 0.0 && !n.value.is_nan(),
        Expression::StringLiteral(s) => !s.value.is_empty(),
        Expression::UnaryExpression(u) if u.operator.as_str() == "!" => falsy(&u.argument),
        _ => false,
    }
}

fn rethrows(stmts: &[Statement]) -> bool {
    stmts
        .iter()
        .any(|s| matches!(s, Statement::ThrowStatement(_)))
}

impl Walker<'_> {
    fn push(&mut self, span: oxc_span::Span, kind: Kind) {
        let (s, e) = (span.start as usize, span.end as usize);
        let a = Assertion {
            text: snippet(self.src, s, e),
            line: self.lines.line(s),
            kind,
            dead: self.dead.clone(),
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
}

impl<'a> Visit<'a> for Walker<'_> {
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        let name = base_name(&it.callee);
        let titled = title(it.arguments.first());
        if let (Some(name), Some(t)) = (name, titled.as_ref()) {
            if SUITES.contains(&name) {
                self.titles.push(t.clone());
                walk::walk_call_expression(self, it);
                self.titles.pop();
                return;
            }
            if TESTS.contains(&name) && self.current == 0 {
                let mut id = self.titles.join(" > ");
                if !id.is_empty() {
                    id.push_str(" > ");
                }
                id.push_str(t);
                self.units.push(Unit {
                    id,
                    is_test: true,
                    line: self.line(it.span.start),
                    asserts: Vec::new(),
                });
                self.current = self.units.len() - 1;
                walk::walk_call_expression(self, it);
                self.current = 0;
                return;
            }
        }
        if let Some(k) = call_kind(it) {
            self.push(it.span, k);
        }
        walk::walk_call_expression(self, it);
    }

    fn visit_expression_statement(&mut self, it: &ExpressionStatement<'a>) {
        if let Some(k) = property_kind(&it.expression) {
            self.push(it.expression.span(), k);
        }
        walk::walk_expression_statement(self, it);
    }

    fn visit_statements(&mut self, it: &oxc_allocator::Vec<'a, Statement<'a>>) {
        let saved = self.dead.clone();
        for stmt in it {
            self.visit_statement(stmt);
            if self.dead.is_none() {
                let why = match stmt {
                    Statement::ReturnStatement(_) => Some("`return`"),
                    Statement::ThrowStatement(_) => Some("`throw`"),
                    Statement::ContinueStatement(_) => Some("`continue`"),
                    Statement::BreakStatement(_) => Some("`break`"),
                    _ => None,
                };
                if let Some(why) = why {
                    let line = self.line(stmt.span().start);
                    self.dead = Some(format!("it comes after {why} on line {line}"));
                }
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

    fn visit_try_statement(&mut self, it: &TryStatement<'a>) {
        let swallowed = it.handler.as_ref().and_then(|h| {
            (!rethrows(&h.body.body)).then(|| {
                format!(
                    "the `catch` on line {} swallows its failure",
                    self.line(h.span.start)
                )
            })
        });
        self.with_dead(swallowed, |w| w.visit_block_statement(&it.block));
        if let Some(h) = &it.handler {
            self.visit_catch_clause(h);
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
}
