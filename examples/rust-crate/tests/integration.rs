use kiln_example::*;

#[test]
fn positions_match_naive_search() {
    let hay = b"abracadabra";
    let naive: Vec<usize> = hay.iter().enumerate().filter(|(_, &b)| b == b'a').map(|(i, _)| i).collect();
    assert_eq!(positions(hay, b'a'), naive);
}

#[test]
fn shapes_sort_by_area() {
    let v = sort_by_key_desc(&[3i64, -1, 7, 0], |x| *x);
    assert_eq!(v, vec![7, 3, 0, -1]);
}
