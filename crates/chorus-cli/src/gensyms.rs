//! Gensyms in printed expansions.

use chorus_lang::{Form, FormKind};
use std::collections::{HashMap, HashSet};

/// `forms` with every gensym (`#:g12`, a name the reader refuses) renamed to a plain symbol
/// that no other symbol of `forms` has (`g12`, else `g12-2`, ...), so that the printed
/// expansion reads back and compiles as the same program.
pub(crate) fn readable(forms: Vec<Form>) -> Vec<Form> {
    fn visit<'a>(form: &'a Form, names: &mut HashSet<&'a str>) {
        match &form.kind {
            FormKind::Symbol(name) => {
                names.insert(name);
            }
            FormKind::List(items) => items.iter().for_each(|item| visit(item, names)),
            _ => {}
        }
    }
    fn rename(form: &mut Form, renames: &HashMap<String, String>) {
        match &mut form.kind {
            FormKind::Symbol(name) => {
                if let Some(new) = renames.get(name.as_str()) {
                    name.clone_from(new);
                }
            }
            FormKind::List(items) => items.iter_mut().for_each(|item| rename(item, renames)),
            _ => {}
        }
    }
    let mut names = HashSet::new();
    forms.iter().for_each(|form| visit(form, &mut names));
    let mut gensyms: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| name.starts_with(chorus_lang::reader::GENSYM_PREFIX))
        .collect();
    // Sorted, so that the output does not depend on the set's order.
    gensyms.sort_unstable();
    let mut taken: HashSet<String> = names.iter().map(|name| name.to_string()).collect();
    let mut renames = HashMap::new();
    for gensym in gensyms {
        let base = &gensym[chorus_lang::reader::GENSYM_PREFIX.len()..];
        let base = if base.is_empty() { "g" } else { base };
        let fresh = std::iter::once(base.to_string())
            .chain((2..).map(|n| format!("{base}-{n}")))
            .find(|candidate| !taken.contains(candidate))
            .expect("an unbounded sequence has a name not taken");
        taken.insert(fresh.clone());
        renames.insert(gensym.to_string(), fresh);
    }
    if renames.is_empty() {
        return forms;
    }
    let mut forms = forms;
    forms.iter_mut().for_each(|form| rename(form, &renames));
    forms
}
