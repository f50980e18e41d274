use kiln_example::*;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--panic") {
        panic_at_depth(3);
    }
    let text = "the quick brown fox jumps over the lazy dog The End";
    for (word, n) in word_counts(text) {
        println!("{word}: {n}");
    }
    println!("positions of 'o': {:?}", positions(text.as_bytes(), b'o'));
    for n in [10, 50, 100, 150] {
        println!("fib({n}) = {}", fibonacci_u128(n));
    }
    let (mean, dev) = mean_and_deviation(&[1.5, 2.5, 3.25, 8.0, -4.125]);
    println!("mean {mean:.6} deviation {dev:.6}");
    let shapes: Vec<Box<dyn Shape>> = vec![Box::new(Rect { w: 3.0, h: 4.5 }), Box::new(Circle { r: 2.0 })];
    for s in sort_by_key_desc(&[0usize, 1], |i| (shapes[*i].area() * 1000.0) as i64) {
        println!("{} area {:.4}", shapes[s].name(), shapes[s].area());
    }
    for expr in ["3 4 + 2 *", "10 3 %", "1 0 /", "9223372036854775807 1 +", "2 x"] {
        println!("{expr:?} => {:?}", eval_rpn(expr));
    }
    std::panic::set_hook(Box::new(|_| {}));
    println!("{:?}", survives_panic(|| { let v: Vec<i32> = Vec::new(); v[3] }));
    println!("{:?}", survives_panic(|| 41 + 1));
}
