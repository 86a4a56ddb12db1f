//! The generator and the mutator stay useful: reproducible from a seed, and enough generated
//! modules pass the checker to reach the printer and the executor (a change of the language
//! that breaks the generator would otherwise leave the later targets unfuzzed).

use chorus_fuzz::generate::module;
use chorus_fuzz::mutate::{MAX_MUTANT_BYTES, mutate};
use chorus_fuzz::rng::Rng;

#[test]
fn the_same_seed_gives_the_same_inputs() {
    let (mut a, mut b) = (Rng::new(9), Rng::new(9));
    for _ in 0..20 {
        let (x, y) = (module(&mut a), module(&mut b));
        assert_eq!(x, y);
        assert_eq!(mutate(&mut a, &x, &[]), mutate(&mut b, &y, &[]));
    }
}

#[test]
fn a_tenth_of_generated_modules_pass_the_checker() {
    let mut rng = Rng::new(3);
    let total = 200;
    let accepted = (0..total)
        .filter(|_| chorus_lang::compile_str(&module(&mut rng), "g.lisp").is_ok())
        .count();
    assert!(accepted * 10 >= total, "{accepted} of {total} accepted");
}

#[test]
fn mutants_stay_bounded() {
    let mut rng = Rng::new(5);
    let corpus = chorus_fuzz::corpus();
    assert!(corpus.len() > 20, "{} corpus files", corpus.len());
    let mut text = corpus[0].clone();
    for _ in 0..500 {
        text = mutate(&mut rng, &text, &corpus);
        assert!(text.len() <= MAX_MUTANT_BYTES);
    }
}
