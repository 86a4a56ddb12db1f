//! Binding arguments to a lambda list ([`LambdaList`], parsed in `expand::lambda_list`): the
//! variables go to a [`Binder`], which also evaluates the defaults.

use super::*;
use crate::expand::lambda_list::{Key, Pattern};

impl LambdaList {
    /// Binds `args` (the whole argument list is `whole`) to this lambda list: variables go to
    /// `binder`, which also evaluates defaults. `span` and `what` ("macro `square`") make the
    /// arity errors.
    pub fn bind(
        &self,
        args: &[Value],
        whole: &Value,
        binder: &mut dyn Binder,
        span: &Span,
        what: &str,
    ) -> Result<()> {
        if let Some(whole_pattern) = &self.whole {
            bind_pattern(whole_pattern, whole.clone(), binder, span, what)?;
        }
        if let Some(env) = &self.environment {
            binder.bind(env, Value::nil(span));
        }
        if args.len() < self.required.len() {
            return Err(Error::new(span, self.arity_message(args.len(), what)));
        }
        let (required, mut rest) = args.split_at(self.required.len());
        for (pattern, arg) in self.required.iter().zip(required) {
            bind_pattern(pattern, arg.clone(), binder, span, what)?;
        }
        for optional in &self.optional {
            let (value, supplied) = match rest.split_first() {
                Some((arg, tail)) => {
                    rest = tail;
                    (arg.clone(), true)
                }
                None => match &optional.default {
                    Some(default) => (binder.eval(default)?, false),
                    None => (Value::nil(span), false),
                },
            };
            bind_pattern(&optional.pattern, value, binder, span, what)?;
            if let Some(supplied_var) = &optional.supplied {
                binder.bind(supplied_var, Value::boolean(supplied, span));
            }
        }
        if let Some(rest_pattern) = &self.rest {
            let list = Value::list_of(rest, span).ok_or_else(|| {
                Error::new(
                    span,
                    format!("{what}: a function cannot be part of a &rest list"),
                )
            })?;
            bind_pattern(rest_pattern, list, binder, span, what)?;
        }
        match &self.keys {
            Some(keys) => self.bind_keys(keys, rest, binder, span, what)?,
            None if self.rest.is_none() && !rest.is_empty() => {
                return Err(Error::new(span, self.arity_message(args.len(), what)));
            }
            None => {}
        }
        for (var, init) in &self.aux {
            let value = match init {
                Some(init) => binder.eval(init)?,
                None => Value::nil(span),
            };
            binder.bind(var, value);
        }
        Ok(())
    }

    fn bind_keys(
        &self,
        keys: &[Key],
        rest: &[Value],
        binder: &mut dyn Binder,
        span: &Span,
        what: &str,
    ) -> Result<()> {
        if !rest.len().is_multiple_of(2) {
            return Err(Error::new(
                span,
                format!(
                    "{what}: the keyword arguments must come in pairs (:key value), got an odd number"
                ),
            ));
        }
        let pairs: Vec<(&Value, &Value)> = rest.chunks(2).map(|p| (&p[0], &p[1])).collect();
        let allow_other = self.allow_other_keys
            || pairs
                .iter()
                .any(|(k, v)| k.is_symbol(":allow-other-keys") && !v.is_nil());
        for (key, _) in &pairs {
            let known = key.as_symbol().is_some_and(|k| {
                k == ":allow-other-keys" || keys.iter().any(|param| param.keyword == k)
            });
            if !known && !allow_other {
                let expected: Vec<&str> = keys.iter().map(|k| k.keyword.as_str()).collect();
                return Err(Error::new(
                    key.span().unwrap_or(span),
                    format!(
                        "{what}: unknown keyword argument `{key}`; the keywords are {}",
                        if expected.is_empty() {
                            "none".to_string()
                        } else {
                            expected.join(" ")
                        }
                    ),
                ));
            }
        }
        for key in keys {
            // As in Common Lisp, the first occurrence of a keyword wins.
            let found = pairs.iter().find(|(k, _)| k.is_symbol(&key.keyword));
            let (value, supplied) = match found {
                Some((_, v)) => ((*v).clone(), true),
                None => match &key.default {
                    Some(default) => (binder.eval(default)?, false),
                    None => (Value::nil(span), false),
                },
            };
            bind_pattern(&key.pattern, value, binder, span, what)?;
            if let Some(supplied_var) = &key.supplied {
                binder.bind(supplied_var, Value::boolean(supplied, span));
            }
        }
        Ok(())
    }

    fn arity_message(&self, got: usize, what: &str) -> String {
        let min = self.required.len();
        let expected = if self.rest.is_some() || self.keys.is_some() {
            format!("at least {min}")
        } else if self.optional.is_empty() {
            format!("{min}")
        } else {
            format!("{min} to {}", min + self.optional.len())
        };
        let plural = if expected == "1" { "" } else { "s" };
        format!(
            "{what} takes {expected} argument{plural} {}, but got {got}",
            self.source
        )
    }
}

/// Receives the bindings a lambda list makes, and evaluates defaults in the bindings so far.
pub(crate) trait Binder {
    /// Binds `name` to `value`.
    fn bind(&mut self, name: &str, value: Value);
    /// Evaluates a default (`&optional (x 1)`) after the parameters to its left are bound.
    fn eval(&mut self, form: &Form) -> Result<Value>;
}

fn bind_pattern(
    pattern: &Pattern,
    value: Value,
    binder: &mut dyn Binder,
    span: &Span,
    what: &str,
) -> Result<()> {
    match pattern {
        Pattern::Var(name) => {
            binder.bind(name, value);
            Ok(())
        }
        Pattern::List(list) => {
            let Some(items) = value.as_list() else {
                return Err(Error::new(
                    value.span().unwrap_or(span),
                    format!(
                        "{what}: expected a list matching {}, got `{value}`",
                        list.source
                    ),
                ));
            };
            let args: Vec<Value> = items.iter().cloned().map(Value::Data).collect();
            // Arity errors inside a nested pattern point at the argument being destructured.
            let inner_span = value.span().unwrap_or(span).clone();
            list.bind(&args, &value, binder, &inner_span, what)
        }
    }
}
