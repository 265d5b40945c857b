//! A change's call graph as SVG, laid out by layout-rs (a Sugiyama layout in pure Rust), so a
//! page can show it without a script or a request. Each definition is a `<g class="cg-node
//! {change}" data-fn="{qualname}">` and each call a `<g class="cg-edge">` (`cg-unresolved` when
//! dashed): the page's CSS colours them, light or dark, and a test counts them.

use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use crate::graph::Graph;
use crate::mermaid::short;

/// The graph as one `<svg>` element (no XML prolog: it is meant to be inlined in HTML). Ids
/// inside it start with `prefix`, so several drawings can share a page. None for an empty graph.
pub fn render(g: &Graph, prefix: &str) -> Option<String> {
    if g.nodes.is_empty() {
        return None;
    }
    let dir = Orientation::LeftToRight;
    let look = StyleAttr::new(Color::fast("black"), 1, Some(Color::fast("white")), 4, 12);
    let mut vg = VisualGraph::new(dir);
    let handles: Vec<_> = g
        .nodes
        .iter()
        .map(|n| {
            let shape = ShapeKind::new_box(&format!("{}{}", n.qualname, short(&n.signature)));
            let size = get_shape_size(dir, &shape, look.font_size, false);
            let change = n.change.map_or("outside", |c| c.as_str());
            let props = format!(
                "class=\"cg-node {change}\" data-fn=\"{}\" data-file=\"{}\"",
                attr(&n.qualname),
                attr(&n.path)
            );
            vg.add_node(Element::create_with_properties(
                shape,
                look.clone(),
                dir,
                size,
                props,
            ))
        })
        .collect();
    for e in &g.edges {
        let (style, class) = if e.resolved {
            (LineStyleKind::Normal, "cg-edge")
        } else {
            (LineStyleKind::Dashed, "cg-edge cg-unresolved")
        };
        let props = format!(
            "class=\"{class}\" data-from=\"{}\" data-to=\"{}\"",
            attr(&g.nodes[e.from].qualname),
            attr(&g.nodes[e.to].qualname)
        );
        let arrow = Arrow::with_properties(
            LineEndKind::None,
            LineEndKind::Arrow,
            style,
            "",
            &look,
            props,
            &None,
            &None,
        );
        vg.add_edge(arrow, handles[e.from], handles[e.to]);
    }
    let mut w = SVGWriter::new();
    vg.do_it(false, false, false, &mut w);
    let svg = w.finalize();
    let svg = svg.get(svg.find("<svg")?..)?;
    // The writer's ids are fixed names; a page with several drawings needs them unique.
    Some(
        svg.replace("id=\"arrow", &format!("id=\"{prefix}arrow"))
            .replace("#arrow", &format!("#{prefix}arrow"))
            .replace("startarrow", &format!("{prefix}startarrow"))
            .replace("endarrow", &format!("{prefix}endarrow"))
            .replace("id=\"C", &format!("id=\"{prefix}C"))
            .replace("url(#C", &format!("url(#{prefix}C"))
            .replacen("<svg ", "<svg class=\"cg\" role=\"img\" ", 1),
    )
}

/// Text safe inside a double-quoted attribute.
fn attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{diff, graph, snapshot};

    fn drawn(old: &str, new: &str) -> (Graph, String) {
        let (a, b) = (
            snapshot("m.py", old.as_bytes()),
            snapshot("m.py", new.as_bytes()),
        );
        let g = graph::build(&diff(Some(&a), &b), &[&b], false, false);
        let svg = render(&g, "g0-").unwrap();
        (g, svg)
    }

    #[test]
    fn a_node_per_changed_definition_and_an_edge_per_call_among_them() {
        let (g, svg) = drawn(
            "def a():\n    return 1\n\ndef keep():\n    return 2\n",
            "def a():\n    return b(1) + keep() + outside()\n\ndef b(x):\n    return b(x - 1)\n\ndef keep():\n    return 2\n\nclass C:\n    def m(self):\n        return self.n()\n    def n(self):\n        return a()\n",
        );
        let names: Vec<&str> = g.nodes.iter().map(|n| n.qualname.as_str()).collect();
        assert_eq!(names, ["a", "b", "C", "C.m", "C.n"]);
        // a→b, b→b (recursion), C.m→C.n, C.n→a; a→keep and a→outside() leave the changed set.
        assert_eq!(g.edges.len(), 4, "{:?}", g.edges);
        assert_eq!(svg.matches("class=\"cg-node").count(), 5, "{svg}");
        assert_eq!(svg.matches("class=\"cg-edge").count(), 4, "{svg}");
        assert!(
            svg.contains("data-fn=\"C.m\" ") && svg.contains("cg-node new"),
            "{svg}"
        );
        assert!(svg.starts_with("<svg class=\"cg\""), "{svg}");
        assert!(
            !svg.contains("id=\"arrow") && svg.contains("url(#g0-endarrow)"),
            "{svg}"
        );
    }

    #[test]
    fn nothing_changed_draws_nothing() {
        let g = Graph::default();
        assert_eq!(render(&g, "x"), None);
    }
}
