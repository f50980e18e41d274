//! Code shaped like real Rust: generics, traits, closures, iterators, panics that
//! unwind, 128-bit and floating-point arithmetic, and a dependency (memchr).

use std::collections::BTreeMap;
use std::fmt;

/// Counts words, case-folded, in a deterministic order.
pub fn word_counts(text: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        *counts.entry(word.to_lowercase()).or_insert(0) += 1;
    }
    counts
}

/// Positions of a byte, found with memchr.
pub fn positions(haystack: &[u8], needle: u8) -> Vec<usize> {
    memchr::memchr_iter(needle, haystack).collect()
}

pub fn fibonacci_u128(n: u32) -> u128 {
    let (mut a, mut b) = (0u128, 1u128);
    for _ in 0..n {
        let next = a.wrapping_add(b);
        a = b;
        b = next;
    }
    a
}

pub fn mean_and_deviation(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> String;
}

pub struct Rect {
    pub w: f64,
    pub h: f64,
}
pub struct Circle {
    pub r: f32,
}

impl Shape for Rect {
    fn area(&self) -> f64 {
        self.w * self.h
    }
    fn name(&self) -> String {
        format!("rect {}x{}", self.w, self.h)
    }
}
impl Shape for Circle {
    fn area(&self) -> f64 {
        (std::f32::consts::PI * self.r * self.r) as f64
    }
    fn name(&self) -> String {
        format!("circle r={}", self.r)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Number(i64),
    Op(char),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Number(n) => write!(f, "{}", n),
            Token::Op(c) => write!(f, "{}", c),
        }
    }
}

/// Evaluates a reverse-Polish expression; errors are values, not panics.
pub fn eval_rpn(input: &str) -> Result<i64, String> {
    let mut stack: Vec<i64> = Vec::new();
    for item in input.split_whitespace() {
        let token = match item.parse::<i64>() {
            Ok(n) => Token::Number(n),
            Err(_) if item.len() == 1 => Token::Op(item.chars().next().unwrap()),
            Err(_) => return Err(format!("bad token {:?}", item)),
        };
        match token {
            Token::Number(n) => stack.push(n),
            Token::Op(op) => {
                let b = stack.pop().ok_or("stack underflow")?;
                let a = stack.pop().ok_or("stack underflow")?;
                stack.push(match op {
                    '+' => a.checked_add(b).ok_or("overflow")?,
                    '-' => a.checked_sub(b).ok_or("overflow")?,
                    '*' => a.checked_mul(b).ok_or("overflow")?,
                    '/' => a.checked_div(b).ok_or("division by zero")?,
                    '%' => a.checked_rem(b).ok_or("division by zero")?,
                    _ => return Err(format!("unknown operator {}", op)),
                });
            }
        }
    }
    if stack.len() == 1 { Ok(stack[0]) } else { Err(format!("{} values left", stack.len())) }
}

/// Runs a closure that may panic and reports whether it unwound.
pub fn survives_panic<F: FnOnce() -> i32 + std::panic::UnwindSafe>(f: F) -> Result<i32, String> {
    std::panic::catch_unwind(f).map_err(|e| {
        e.downcast_ref::<&str>().map(|s| s.to_string())
            .or_else(|| e.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string())
    })
}

pub fn sort_by_key_desc<T: Clone, K: Ord, F: Fn(&T) -> K>(items: &[T], key: F) -> Vec<T> {
    let mut v = items.to_vec();
    v.sort_by(|a, b| key(b).cmp(&key(a)));
    v
}

/// Panics `depth` calls down: `kiln-example --panic` with RUST_BACKTRACE=1 prints a
/// backtrace, which kiln's tests compare between builds.
pub fn panic_at_depth(depth: u32) -> u32 {
    if depth == 0 {
        panic!("panic at depth 0");
    }
    panic_at_depth(depth - 1) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        let c = word_counts("a b A c, b!");
        assert_eq!(c["a"], 2);
        assert_eq!(c["b"], 2);
        assert_eq!(c["c"], 1);
    }

    #[test]
    fn rpn() {
        assert_eq!(eval_rpn("3 4 + 2 *"), Ok(14));
        assert!(eval_rpn("1 0 /").is_err());
        assert!(eval_rpn("+").is_err());
    }

    #[test]
    fn big_fibonacci() {
        assert_eq!(fibonacci_u128(100), 354224848179261915075);
    }

    #[test]
    fn panics_unwind() {
        assert_eq!(survives_panic(|| 7), Ok(7));
        assert_eq!(survives_panic(|| panic!("boom")), Err("boom".to_string()));
    }
}
