//! PNG figures: an SVG of this crate rasterised in pure Rust (resvg) with the embedded DejaVu Sans
//! (the `dejavu` crate; licence in `FONT-LICENSE-DejaVu.txt` beside this crate's manifest) as the
//! only font, so a figure's pixels do not depend on the fonts a machine has.

use resvg::{tiny_skia, usvg};

/// Why a figure could not be rasterised.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error("the SVG does not parse: {0}")]
    Parse(String),
    #[error("the figure is empty or too large to rasterise ({width} × {height} px)")]
    Size { width: u32, height: u32 },
    #[error("PNG encoding failed: {0}")]
    Encode(String),
}

/// The PNG of `svg` at `scale` pixels per SVG unit (2.0 for sharp figures on high-density screens).
pub fn svg_to_png(svg: &str, scale: f32) -> Result<Vec<u8>, PngError> {
    let mut options = usvg::Options { font_family: "DejaVu Sans".to_string(), ..usvg::Options::default() };
    let fonts = options.fontdb_mut();
    fonts.load_font_data(dejavu::sans::regular().to_vec());
    fonts.load_font_data(dejavu::sans::bold().to_vec());
    fonts.set_sans_serif_family("DejaVu Sans");
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| PngError::Parse(e.to_string()))?;
    let size = tree.size();
    let (width, height) = ((size.width() * scale).ceil() as u32, (size.height() * scale).ceil() as u32);
    let mut pixmap = tiny_skia::Pixmap::new(width, height).ok_or(PngError::Size { width, height })?;
    resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| PngError::Encode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Svg;

    #[test]
    fn a_figure_with_text_rasterises_deterministically_with_the_embedded_font() {
        let mut s = Svg::new(80.0, 30.0);
        s.rect(0.0, 0.0, 40.0, 30.0, "#4e79a7", None);
        s.text(60.0, 20.0, "ECE", 12.0, "middle");
        let svg = s.finish();
        let a = svg_to_png(&svg, 2.0).unwrap();
        assert_eq!(&a[1..4], b"PNG");
        assert_eq!(a, svg_to_png(&svg, 2.0).unwrap(), "same bytes every time");
        // The text is drawn: the same figure without it differs.
        let mut bare = Svg::new(80.0, 30.0);
        bare.rect(0.0, 0.0, 40.0, 30.0, "#4e79a7", None);
        assert_ne!(a, svg_to_png(&bare.finish(), 2.0).unwrap(), "the embedded font draws the label");
        assert!(matches!(svg_to_png("<svg", 1.0), Err(PngError::Parse(_))));
    }
}
