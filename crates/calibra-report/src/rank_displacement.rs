//! Rank-displacement (slope) chart: each encoder's rank under ordering A joined to its rank under B.

use crate::svg::Svg;

/// An SVG slope chart. `moves` are `(encoder, rank_a, rank_b)` with 1 = best; lines of encoders that
/// moved are drawn in colour (up: green, down: red), unchanged ones in grey.
pub fn rank_displacement(
    title: &str,
    label_a: &str,
    label_b: &str,
    moves: &[(String, usize, usize)],
) -> String {
    let n = moves.iter().map(|m| m.1.max(m.2)).max().unwrap_or(1).max(1);
    let row = 22.0;
    let top = 60.0;
    let xa = 190.0;
    let xb = 390.0;
    let height = top + row * n as f64 + 20.0;
    let mut s = Svg::new(580.0, height);
    let y_of = |rank: usize| top + (rank as f64 - 1.0) * row;
    s.text(290.0, 22.0, title, 14.0, "middle");
    s.text(xa, 46.0, label_a, 12.0, "middle");
    s.text(xb, 46.0, label_b, 12.0, "middle");
    for (name, ra, rb) in moves {
        let color = match rb.cmp(ra) {
            std::cmp::Ordering::Less => "#59a14f",
            std::cmp::Ordering::Greater => "#e15759",
            std::cmp::Ordering::Equal => "#9c9c9c",
        };
        s.line(xa, y_of(*ra), xb, y_of(*rb), color, false);
        s.text(xa - 8.0, y_of(*ra) + 4.0, &format!("{name} ({ra})"), 11.0, "end");
        s.text(xb + 8.0, y_of(*rb) + 4.0, &format!("({rb}) {name}"), 11.0, "start");
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_follow_the_direction_of_the_move() {
        let moves = vec![("a".to_string(), 1, 2), ("b".to_string(), 2, 1), ("c".to_string(), 3, 3)];
        let svg = rank_displacement("t", "AUROC", "CRS", &moves);
        assert_eq!(svg.matches("stroke=\"#59a14f\"").count(), 1);
        assert_eq!(svg.matches("stroke=\"#e15759\"").count(), 1);
        assert_eq!(svg.matches("stroke=\"#9c9c9c\"").count(), 1);
    }
}
