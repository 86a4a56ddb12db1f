//! Readable, indented printing of forms for `chorus expand`.

use chorus_lang::Form;

/// Lines longer than this are broken.
const WIDTH: usize = 100;

/// `form` as text the reader reads back, broken over lines and indented when it does not fit on
/// one line: a list keeps its head and first argument on its first line and puts each further
/// item on a line of its own, two columns in from the list's parenthesis.
pub fn pretty(form: &Form) -> String {
    let mut out = String::new();
    write_form(form, 0, &mut out);
    out
}

fn write_form(form: &Form, column: usize, out: &mut String) {
    let flat = form.to_string();
    let Some(items) = form.as_list() else {
        out.push_str(&flat);
        return;
    };
    if column + flat.len() <= WIDTH || items.len() < 2 {
        out.push_str(&flat);
        return;
    }
    if let [head, arg] = items
        && let Some(prefix) = quote_prefix(head)
    {
        out.push_str(prefix);
        write_form(arg, column + prefix.len(), out);
        return;
    }
    out.push('(');
    let inner = column + 2;
    let head = items[0].to_string();
    write_form(&items[0], column + 1, out);
    let mut rest = &items[1..];
    let mut line_end = column + 1 + head.len();
    // The distinguished arguments (a definition's name and signature, a `do`'s bindings and
    // test, otherwise the first argument) stay beside a symbol head while they fit there.
    if let Some(name) = items[0].as_symbol() {
        let keep = if matches!(name, "defkernel" | "defkernelmacro" | "do") {
            2
        } else {
            1
        };
        while rest.len() > 1 && items.len() - rest.len() <= keep {
            let next = rest[0].to_string();
            if line_end + 1 + next.len() > WIDTH {
                break;
            }
            out.push(' ');
            out.push_str(&next);
            line_end += 1 + next.len();
            rest = &rest[1..];
        }
    }
    for item in rest {
        out.push('\n');
        out.push_str(&" ".repeat(inner));
        write_form(item, inner, out);
    }
    out.push(')');
}

fn quote_prefix(head: &Form) -> Option<&'static str> {
    match head.as_symbol()? {
        "quote" => Some("'"),
        "quasiquote" => Some("`"),
        "unquote" => Some(","),
        "unquote-splicing" => Some(",@"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::pretty;
    use chorus_lang::reader::read_one;

    #[test]
    fn short_forms_stay_on_one_line() {
        let form = read_one("(set (aref c i) (+ (aref a i) 'x))", "t").unwrap();
        assert_eq!(pretty(&form), "(set (aref c i) (+ (aref a i) 'x))");
    }

    #[test]
    fn long_forms_are_indented_and_read_back() {
        let text = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int))) \
                    (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x))) (if (< i n) \
                    (set (aref c i) (+ (aref a i) (aref b i))))))";
        let form = read_one(text, "t").unwrap();
        let printed = pretty(&form);
        assert_eq!(
            printed,
            "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))\n  \
             (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))\n    \
             (if (< i n) (set (aref c i) (+ (aref a i) (aref b i))))))"
        );
        assert!(read_one(&printed, "t").unwrap().same(&form));
        assert!(printed.lines().all(|l| l.len() <= 100));
    }
}
