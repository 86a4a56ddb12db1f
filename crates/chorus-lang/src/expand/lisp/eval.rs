//! The evaluator: variables, calls, function application, quasiquote and the helpers the
//! special forms share.

use super::*;

impl<'a, 'c> Interp<'a, 'c> {
    /// The error for `form` in the macro's code: it names the macro and the call being expanded.
    pub(super) fn error(&self, span: &Span, message: impl fmt::Display) -> Error {
        Error::new(span, self.in_macro(message))
    }

    /// `message`, prefixed with the macro and the call being expanded.
    pub(super) fn in_macro(&self, message: impl fmt::Display) -> String {
        format!(
            "in macro `{}` (expanding the call at {}): {message}",
            self.cx.name(),
            self.cx.span()
        )
    }

    pub(super) fn call_span(&self) -> &Span {
        self.cx.span()
    }

    pub(super) fn data(&self, kind: FormKind) -> Value {
        if let FormKind::Str(text) = &kind {
            self.charge(text.len());
        }
        Value::Data(Form::new(kind, self.call_span().clone()))
    }

    pub(super) fn symbol(&self, name: &str) -> Value {
        Value::Data(Form::symbol(name, self.call_span().clone()))
    }

    pub(super) fn boolean(&self, b: bool) -> Value {
        Value::boolean(b, self.call_span())
    }

    pub(super) fn list(&self, items: Vec<Form>) -> Value {
        self.charge(1);
        items.iter().for_each(|item| self.charge_nodes(item));
        Value::Data(Form::list(items, self.call_span().clone()))
    }

    pub(super) fn eval_body(&mut self, body: &[Form], env: &Env) -> Result<Value> {
        let mut result = Value::nil(self.call_span());
        for form in strip_declarations(body) {
            result = self.eval(form, env)?;
        }
        Ok(result)
    }

    /// Charges for a copy of `form`: one step per atom and list in it (counted without
    /// recursion). Forms are trees of vectors, so copying one costs its size.
    pub(super) fn charge_nodes(&self, form: &Form) {
        let mut pending = vec![form];
        let mut nodes = 0;
        while let Some(form) = pending.pop() {
            nodes += 1;
            match &form.kind {
                FormKind::List(items) => pending.extend(items),
                FormKind::Str(text) => nodes += text.len(),
                _ => {}
            }
        }
        self.charge(nodes);
    }

    pub(super) fn charge_value(&self, value: &Value) {
        if let Value::Data(form) = value {
            self.charge_nodes(form);
        }
    }

    /// Adds `n` to the work done (checked at the next [`Interp::tick`]).
    pub(super) fn charge(&self, n: usize) {
        self.steps.set(self.steps.get().saturating_add(n as u64));
    }

    /// Counts one step of work and stops a macro that has done too much.
    pub(super) fn tick(&self, span: &Span) -> Result<()> {
        self.charge(1);
        if self.steps.get() > MAX_STEPS {
            return Err(self.error(
                span,
                format!("the macro ran for more than {MAX_STEPS} steps; does it loop forever?"),
            ));
        }
        Ok(())
    }

    pub(super) fn eval(&mut self, form: &Form, env: &Env) -> Result<Value> {
        self.tick(&form.span)?;
        match &form.kind {
            FormKind::Symbol(name) => {
                if matches!(name.as_str(), "t" | "nil") || name.starts_with(':') {
                    return Ok(Value::Data(respan(form, self.call_span())));
                }
                match env.lookup(name) {
                    Some(cell) => {
                        let value = cell.value.borrow().clone();
                        self.charge_value(&value);
                        Ok(value)
                    }
                    None => Err(self.error(&form.span, format!("unbound variable `{name}`"))),
                }
            }
            FormKind::Int { .. } | FormKind::Float { .. } | FormKind::Str(_) => {
                self.charge_nodes(form);
                Ok(Value::Data(respan(form, self.call_span())))
            }
            FormKind::List(items) => {
                let Some((head, args)) = items.split_first() else {
                    return Ok(Value::nil(self.call_span()));
                };
                match &head.kind {
                    FormKind::Symbol(name) => self.eval_call(canonical(name), form, args, env),
                    FormKind::List(lambda)
                        if lambda.first().is_some_and(|h| h.is_symbol("lambda")) =>
                    {
                        let function = self.eval(head, env)?;
                        let args = self.eval_args(args, env)?;
                        self.apply(&function, args, &form.span)
                    }
                    _ => Err(self.error(&head.span, format!("`{head}` is not a function name"))),
                }
            }
        }
    }

    pub(super) fn eval_args(&mut self, args: &[Form], env: &Env) -> Result<Vec<Value>> {
        args.iter().map(|a| self.eval(a, env)).collect()
    }

    pub(super) fn eval_call(
        &mut self,
        name: &str,
        form: &Form,
        args: &[Form],
        env: &Env,
    ) -> Result<Value> {
        if let Some(function) = env.lookup_function(name) {
            let args = self.eval_args(args, env)?;
            return self.apply(&Value::Function(function), args, &form.span);
        }
        if SPECIAL_FORMS.contains(&name) {
            return self.eval_special(name, form, args, env);
        }
        if let Some(builtin) = BUILTINS.iter().find(|b| **b == name) {
            let args = self.eval_args(args, env)?;
            return self.call_builtin(builtin, args, &form.span);
        }
        Err(self.error(
            &form.span,
            format!(
                "unknown macro-time function `{name}`; macro code runs at expansion time and can \
                 call only the built-in list, number and string functions and its own local \
                 functions (flet, labels)"
            ),
        ))
    }

    /// Checks the number of operands of a special form.
    pub(super) fn expect_args(
        &self,
        form: &Form,
        args: &[Form],
        min: usize,
        max: Option<usize>,
    ) -> Result<()> {
        if args.len() < min || max.is_some_and(|m| args.len() > m) {
            let (name, _) = form.as_call().unwrap_or(("form", &[]));
            let expected = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            return Err(self.error(
                &form.span,
                format!("`{name}` takes {expected} operand(s), got {}", args.len()),
            ));
        }
        Ok(())
    }

    /// `(var init)`, `(var)` or `var`.
    pub(super) fn binding<'f>(&self, binding: &'f Form) -> Result<(&'f str, Option<&'f Form>)> {
        match binding.as_list() {
            Some([var]) => Ok((self.variable(var)?, None)),
            Some([var, init]) => Ok((self.variable(var)?, Some(init))),
            Some(_) => Err(self.error(
                &binding.span,
                format!("expected (var init), found `{binding}`"),
            )),
            None => Ok((self.variable(binding)?, None)),
        }
    }

    pub(super) fn variable<'f>(&self, form: &'f Form) -> Result<&'f str> {
        match form.as_symbol() {
            Some(name) if is_bindable(name) => Ok(name),
            _ => Err(self.error(
                &form.span,
                format!("expected a variable name, found `{form}`"),
            )),
        }
    }

    pub(super) fn assign(&self, place: &Form, value: Value, env: &Env) -> Result<()> {
        let Some(name) = place.as_symbol() else {
            return Err(self.error(
                &place.span,
                format!("only variables can be assigned at macro time, not `{place}`"),
            ));
        };
        match env.lookup(name) {
            Some(cell) => {
                *cell.value.borrow_mut() = value;
                Ok(())
            }
            None => Err(self.error(&place.span, format!("unbound variable `{name}`"))),
        }
    }

    pub(super) fn closure(
        &self,
        name: &str,
        params: &Form,
        body: &[Form],
        env: &Env,
    ) -> Result<Rc<Function>> {
        let params =
            LambdaList::parse(params, false).map_err(|e| self.error(&e.span, e.message))?;
        Ok(Rc::new(Function::Closure(Closure {
            name: name.to_string(),
            params,
            body: body.into(),
            env: env.clone(),
        })))
    }

    /// `#'name` or `#'(lambda …)`.
    pub(super) fn function(&self, designator: &Form, env: &Env) -> Result<Value> {
        if let Some((head, rest)) = designator.as_call()
            && head == "lambda"
            && let Some((params, body)) = rest.split_first()
        {
            return Ok(Value::Function(self.closure("lambda", params, body, env)?));
        }
        let Some(name) = designator.as_symbol().map(canonical) else {
            return Err(self.error(
                &designator.span,
                format!("`{designator}` does not name a function"),
            ));
        };
        if let Some(f) = env.lookup_function(name) {
            return Ok(Value::Function(f));
        }
        match BUILTINS.iter().find(|b| **b == name) {
            Some(builtin) => Ok(Value::Function(Rc::new(Function::Builtin(builtin)))),
            None => Err(self.error(
                &designator.span,
                format!("unknown macro-time function `{name}`"),
            )),
        }
    }

    /// Calls a function value (or a symbol naming a built-in, as `funcall` allows).
    pub(super) fn apply(
        &mut self,
        function: &Value,
        args: Vec<Value>,
        span: &Span,
    ) -> Result<Value> {
        let function = match function {
            Value::Function(f) => f.clone(),
            Value::Data(form) => match form
                .as_symbol()
                .map(canonical)
                .and_then(|n| BUILTINS.iter().find(|b| **b == n))
            {
                Some(builtin) => Rc::new(Function::Builtin(builtin)),
                None => return Err(self.error(span, format!("`{form}` is not a function"))),
            },
        };
        match &*function {
            Function::Builtin(name) => self.call_builtin(name, args, span),
            Function::Closure(closure) => {
                if self.depth >= MAX_CALL_DEPTH {
                    return Err(self.error(
                        span,
                        format!("macro-time calls nest more than {MAX_CALL_DEPTH} deep; is `{}` endlessly recursive?", closure.name),
                    ));
                }
                self.depth += 1;
                let mut env = closure.env.clone();
                let whole = Value::nil(span);
                let what = self.in_macro(format!("function `{}`", closure.name));
                let mut binder = EnvBinder {
                    interp: self,
                    env: &mut env,
                };
                let result = closure
                    .params
                    .bind(&args, &whole, &mut binder, span, &what)
                    .and_then(|()| self.eval_body(&closure.body, &env));
                self.depth -= 1;
                result
            }
        }
    }

    /// Fills in the backquote template `template`, `depth` backquotes deep (1 for the outermost).
    pub(super) fn quasiquote(&mut self, template: &Form, depth: usize, env: &Env) -> Result<Form> {
        let span = self.call_span().clone();
        let Some(items) = template.as_list() else {
            return Ok(respan(template, &span));
        };
        if let [head, arg] = items {
            match head.as_symbol() {
                Some("unquote") if depth == 1 => {
                    return match self.eval(arg, env)? {
                        Value::Data(form) => Ok(form),
                        Value::Function(_) => {
                            Err(self.error(&arg.span, "a function cannot be inserted into a form"))
                        }
                    };
                }
                Some("unquote-splicing") if depth == 1 => {
                    return Err(self.error(
                        &template.span,
                        ",@ must be inside a list, as in `(f ,@args)",
                    ));
                }
                Some("unquote" | "unquote-splicing") => {
                    let mut inner =
                        self.quasiquote_items(std::slice::from_ref(arg), depth - 1, env)?;
                    if inner.len() != 1 {
                        return Err(self.error(
                            &template.span,
                            "a comma followed by ,@ must be inside a list, as in `(f `(g ,,@args))",
                        ));
                    }
                    return Ok(Form::list(vec![respan(head, &span), inner.remove(0)], span));
                }
                Some("quasiquote") => {
                    return Ok(Form::list(
                        vec![respan(head, &span), self.quasiquote(arg, depth + 1, env)?],
                        span,
                    ));
                }
                _ => {}
            }
        }
        let items = self.quasiquote_items(items, depth, env)?;
        self.charge(items.len());
        Ok(Form::list(items, span))
    }

    /// The elements of a template list, with `,@` spliced in. An element `,X` or `,@X` of an
    /// inner backquote is filled in one level up, and if `X` splices there (`,,@list`), each
    /// spliced value gets its own comma, as in Common Lisp.
    pub(super) fn quasiquote_items(
        &mut self,
        items: &[Form],
        depth: usize,
        env: &Env,
    ) -> Result<Vec<Form>> {
        let span = self.call_span().clone();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item.as_call() {
                Some(("unquote-splicing", [arg])) if depth == 1 => {
                    let value = self.eval(arg, env)?;
                    let Some(spliced) = value.as_list() else {
                        return Err(self.error(
                            &arg.span,
                            format!(",@ needs a list to splice, got `{value}`"),
                        ));
                    };
                    spliced.iter().for_each(|item| self.charge_nodes(item));
                    out.extend(spliced.iter().cloned());
                }
                Some((op @ ("unquote" | "unquote-splicing"), [arg])) if depth > 1 => {
                    let inner = self.quasiquote_items(std::slice::from_ref(arg), depth - 1, env)?;
                    for value in inner {
                        out.push(Form::list(
                            vec![Form::symbol(op, span.clone()), value],
                            span.clone(),
                        ));
                    }
                }
                _ => out.push(self.quasiquote(item, depth, env)?),
            }
        }
        Ok(out)
    }

    pub(super) fn case(
        &mut self,
        name: &str,
        form: &Form,
        args: &[Form],
        env: &Env,
    ) -> Result<Value> {
        self.expect_args(form, args, 1, None)?;
        let key = self.eval(&args[0], env)?;
        for clause in &args[1..] {
            let Some((keys, body)) = clause.as_list().and_then(|c| c.split_first()) else {
                return Err(self.error(
                    &clause.span,
                    format!("a {name} clause must be (keys form…), found `{clause}`"),
                ));
            };
            let matches = if name == "case" && (keys.is_symbol("t") || keys.is_symbol("otherwise"))
            {
                true
            } else if let Some(list) = keys.as_list() {
                list.iter()
                    .any(|k| key.as_form().is_some_and(|v| eql(v, k)))
            } else {
                key.as_form().is_some_and(|v| eql(v, keys))
            };
            if matches {
                return self.eval_body(body, env);
            }
        }
        if name == "ecase" {
            return Err(Error::new(
                self.call_span(),
                format!(
                    "macro `{}`: `{key}` matches no ecase clause",
                    self.cx.name()
                ),
            ));
        }
        Ok(Value::nil(self.call_span()))
    }

    /// Alexandria's `once-only`: the body sees each name bound to a gensym, and its result is
    /// wrapped in a kernel `let` that evaluates each original form once. Literal numbers and
    /// strings need no temporary and are passed through.
    pub(super) fn once_only(&mut self, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        self.expect_args(form, args, 1, None)?;
        let Some(specs) = list_items(&args[0]) else {
            return Err(self.error(&args[0].span, "once-only needs a list of names"));
        };
        let mut inner = env.clone();
        let mut bindings = Vec::new();
        for spec in specs {
            // `name` (the value of the variable `name`) or `(name initform)`.
            let (var, value) = match spec.as_list() {
                Some([var, init]) => (self.variable(var)?, self.eval(init, env)?),
                _ => {
                    let var = self.variable(spec)?;
                    let value = match env.lookup(var) {
                        Some(cell) => cell.value.borrow().clone(),
                        None => {
                            return Err(self.error(&spec.span, format!("unbound variable `{var}`")));
                        }
                    };
                    (var, value)
                }
            };
            let Value::Data(original) = value else {
                return Err(self.error(&spec.span, "once-only needs forms, not functions"));
            };
            if matches!(
                original.kind,
                FormKind::Int { .. } | FormKind::Float { .. } | FormKind::Str(_)
            ) {
                inner.bind(var, Value::Data(original));
            } else {
                let temp = self.cx.gensym(var);
                bindings.push(Form::list(
                    vec![temp.clone(), original],
                    self.call_span().clone(),
                ));
                inner.bind(var, Value::Data(temp));
            }
        }
        let body = self.eval_body(&args[1..], &inner)?;
        if bindings.is_empty() {
            return Ok(body);
        }
        let Value::Data(body) = body else {
            return Err(self.error(&form.span, "once-only's body must return a form"));
        };
        let span = self.call_span().clone();
        Ok(self.list(vec![
            Form::symbol("let", span.clone()),
            Form::list(bindings, span),
            body,
        ]))
    }

    pub(super) fn has_type(&self, value: &Value, ty: &Form) -> Result<bool> {
        let Some(form) = value.as_form() else {
            return Ok(ty.is_symbol("function") || ty.is_symbol("t"));
        };
        let is_int = matches!(form.kind, FormKind::Int { .. });
        let is_float = |p: Option<FloatPrecision>| match form.kind {
            FormKind::Float { precision, .. } => p.is_none_or(|p| p == precision),
            _ => false,
        };
        Ok(match ty.as_symbol() {
            Some("t") => true,
            Some("fixnum" | "integer") => is_int,
            Some("number" | "real") => is_int || is_float(None),
            Some("float") => is_float(None),
            Some("single-float") => is_float(Some(FloatPrecision::Single)),
            Some("double-float") => is_float(Some(FloatPrecision::Double)),
            Some("symbol") => form.as_symbol().is_some() || form.is_nil(),
            Some("keyword") => form.as_symbol().is_some_and(|s| s.starts_with(':')),
            Some("string") => matches!(form.kind, FormKind::Str(_)),
            Some("list") => form.is_nil() || form.as_list().is_some(),
            Some("cons") => form.as_list().is_some_and(|l| !l.is_empty()),
            Some("null") => form.is_nil(),
            _ => {
                return Err(self.error(
                    &ty.span,
                    format!("check-type does not know the type `{ty}`"),
                ));
            }
        })
    }
}
