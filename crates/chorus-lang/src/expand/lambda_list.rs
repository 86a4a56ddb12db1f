//! Lambda lists: their parsing (binding arguments to them is `lisp::bind`'s).
//!
//! Macro lambda lists destructure, as `defmacro`'s do in Common Lisp: a required or optional
//! parameter may itself be a lambda list (`((var from to) &body body)`). They take `&whole`,
//! `&optional` (default, supplied-p), `&rest`/`&body`, `&key` (default, supplied-p, `(:keyword var)`),
//! `&allow-other-keys`, `&aux` and `&environment` (bound to `nil`: there are no environment
//! objects). The lambda lists of `lambda`, `flet` and `labels` are ordinary: no destructuring of
//! required parameters, no `&whole`.

use crate::error::{Error, Result};
use crate::form::Form;

/// A parsed lambda list.
#[derive(Clone, Debug)]
pub(crate) struct LambdaList {
    /// The list as written, for error messages.
    pub source: Form,
    pub whole: Option<Pattern>,
    pub required: Vec<Pattern>,
    pub optional: Vec<Optional>,
    pub rest: Option<Pattern>,
    /// `Some` when `&key` appears (even with no keys after it).
    pub keys: Option<Vec<Key>>,
    pub allow_other_keys: bool,
    pub environment: Option<String>,
    pub aux: Vec<(String, Option<Form>)>,
}

/// What an argument is bound to: a variable, or a nested lambda list that destructures it.
#[derive(Clone, Debug)]
pub(crate) enum Pattern {
    Var(String),
    List(Box<LambdaList>),
}

#[derive(Clone, Debug)]
pub(crate) struct Optional {
    pub pattern: Pattern,
    pub default: Option<Form>,
    pub supplied: Option<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct Key {
    /// The keyword, with its colon (`:start`).
    pub keyword: String,
    pub pattern: Pattern,
    pub default: Option<Form>,
    pub supplied: Option<String>,
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Section {
    Required,
    Optional,
    Rest,
    AfterRest,
    Key,
    AfterAllowOtherKeys,
    Aux,
}

impl LambdaList {
    /// Parses `form`. `destructuring` allows nested lists as parameters and `&whole`.
    pub fn parse(form: &Form, destructuring: bool) -> Result<LambdaList> {
        let Some(items) = list_items(form) else {
            return Err(Error::new(
                &form.span,
                format!("expected a lambda list (a list of parameters), found `{form}`"),
            ));
        };
        let mut list = LambdaList {
            source: form.clone(),
            whole: None,
            required: Vec::new(),
            optional: Vec::new(),
            rest: None,
            keys: None,
            allow_other_keys: false,
            environment: None,
            aux: Vec::new(),
        };
        let mut section = Section::Required;
        let mut i = 0;
        while i < items.len() {
            let item = &items[i];
            i += 1;
            if let Some(keyword) = item.as_symbol().filter(|s| s.starts_with('&')) {
                let next = |i: usize| {
                    items.get(i).ok_or_else(|| {
                        Error::new(
                            &item.span,
                            format!("`{keyword}` must be followed by a parameter"),
                        )
                    })
                };
                match keyword {
                    "&whole" if destructuring && i == 1 => {
                        list.whole = Some(parse_pattern(next(i)?, destructuring)?);
                        i += 1;
                    }
                    "&whole" => {
                        return Err(Error::new(
                            &item.span,
                            "`&whole` may only come first, in a macro lambda list",
                        ));
                    }
                    "&environment" if destructuring => {
                        let var = next(i)?;
                        list.environment = Some(variable_name(var)?);
                        i += 1;
                    }
                    "&optional" if section < Section::Optional => section = Section::Optional,
                    "&rest" | "&body" if section < Section::Rest => {
                        list.rest = Some(parse_pattern(next(i)?, destructuring)?);
                        i += 1;
                        section = Section::AfterRest;
                    }
                    "&key" if section < Section::Key => {
                        list.keys = Some(Vec::new());
                        section = Section::Key;
                    }
                    "&allow-other-keys" if section == Section::Key => {
                        list.allow_other_keys = true;
                        section = Section::AfterAllowOtherKeys;
                    }
                    "&aux" if section < Section::Aux => section = Section::Aux,
                    _ => {
                        return Err(Error::new(
                            &item.span,
                            format!(
                                "`{keyword}` is misplaced or unknown in the lambda list `{form}`; \
                                 the order is &whole, required, &optional, &rest/&body, &key, \
                                 &allow-other-keys, &aux"
                            ),
                        ));
                    }
                }
                continue;
            }
            match section {
                Section::Required => list.required.push(parse_pattern(item, destructuring)?),
                Section::Optional => list.optional.push(parse_optional(item, destructuring)?),
                Section::Key => {
                    let key = parse_key(item, destructuring)?;
                    if let Some(keys) = &mut list.keys {
                        keys.push(key);
                    }
                }
                Section::Aux => list.aux.push(parse_aux(item)?),
                Section::Rest | Section::AfterRest | Section::AfterAllowOtherKeys => {
                    return Err(Error::new(
                        &item.span,
                        format!("unexpected parameter `{item}` in the lambda list `{form}`"),
                    ));
                }
            }
        }
        Ok(list)
    }
}

/// The items of a list, `nil` included.
fn list_items(form: &Form) -> Option<&[Form]> {
    if form.is_symbol("nil") {
        Some(&[])
    } else {
        form.as_list()
    }
}

fn variable_name(form: &Form) -> Result<String> {
    match form.as_symbol() {
        Some(name) if is_bindable(name) => Ok(name.to_string()),
        _ => Err(Error::new(
            &form.span,
            format!("expected a variable name in the lambda list, found `{form}`"),
        )),
    }
}

/// Whether a symbol can name a variable: not a constant (`t`, `nil`, keywords) nor a lambda-list
/// keyword.
pub(crate) fn is_bindable(name: &str) -> bool {
    !matches!(name, "t" | "nil") && !name.starts_with(':') && !name.starts_with('&')
}

fn parse_pattern(form: &Form, destructuring: bool) -> Result<Pattern> {
    if destructuring && form.as_list().is_some() {
        return Ok(Pattern::List(Box::new(LambdaList::parse(
            form,
            destructuring,
        )?)));
    }
    Ok(Pattern::Var(variable_name(form)?))
}

fn parse_optional(form: &Form, destructuring: bool) -> Result<Optional> {
    match form.as_list() {
        None => Ok(Optional {
            pattern: Pattern::Var(variable_name(form)?),
            default: None,
            supplied: None,
        }),
        Some([pattern, rest @ ..]) if rest.len() <= 2 => Ok(Optional {
            pattern: parse_pattern(pattern, destructuring)?,
            default: rest.first().cloned(),
            supplied: rest.get(1).map(variable_name).transpose()?,
        }),
        Some(_) => Err(Error::new(
            &form.span,
            format!("expected `var` or `(var default supplied-p)` after &optional, found `{form}`"),
        )),
    }
}

fn parse_key(form: &Form, destructuring: bool) -> Result<Key> {
    let keyword_for = |name: &str| format!(":{name}");
    match form.as_list() {
        None => {
            let name = variable_name(form)?;
            Ok(Key {
                keyword: keyword_for(&name),
                pattern: Pattern::Var(name),
                default: None,
                supplied: None,
            })
        }
        Some([spec, rest @ ..]) if rest.len() <= 2 => {
            let (keyword, pattern) = match spec.as_list() {
                // ((:keyword var) default supplied-p)
                Some([keyword, var]) => {
                    let Some(keyword) = keyword.as_symbol() else {
                        return Err(Error::new(
                            &keyword.span,
                            format!("expected a keyword, found `{keyword}`"),
                        ));
                    };
                    (keyword.to_string(), parse_pattern(var, destructuring)?)
                }
                Some(_) => {
                    return Err(Error::new(
                        &spec.span,
                        format!("expected `(:keyword var)`, found `{spec}`"),
                    ));
                }
                None => {
                    let name = variable_name(spec)?;
                    (keyword_for(&name), Pattern::Var(name))
                }
            };
            Ok(Key {
                keyword,
                pattern,
                default: rest.first().cloned(),
                supplied: rest.get(1).map(variable_name).transpose()?,
            })
        }
        Some(_) => Err(Error::new(
            &form.span,
            format!("expected `var` or `(var default supplied-p)` after &key, found `{form}`"),
        )),
    }
}

fn parse_aux(form: &Form) -> Result<(String, Option<Form>)> {
    match form.as_list() {
        None => Ok((variable_name(form)?, None)),
        Some([var]) => Ok((variable_name(var)?, None)),
        Some([var, init]) => Ok((variable_name(var)?, Some(init.clone()))),
        Some(_) => Err(Error::new(
            &form.span,
            format!("expected `var` or `(var init)` after &aux, found `{form}`"),
        )),
    }
}
