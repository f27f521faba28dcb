//! `syncbench report` and `syncbench compare` from the fixture runs in tests/fixtures/runs: the page, the
//! structure of every chart, golden snapshots of chart structure and of compare's output, and bad input.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs")
}

fn fixture(name: &str) -> PathBuf {
    fixtures().join(name)
}

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").expect("binary builds")
}

fn load(name: &str) -> syncbench::present::report::input::RunFile {
    // Relative names keep snapshots independent of where the repository is checked out.
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    syncbench::present::report::input::parse(name, &text).unwrap()
}

/// A readable outline of a chart: title, legend, axes with ticks, series with points, bar groups.
/// Fails if the SVG is not well-formed XML.
fn outline(svg: &str) -> String {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let class_is =
        |node: &roxmltree::Node, class: &str| node.attribute("class").is_some_and(|c| c.split(' ').any(|x| x == class));
    let text_of =
        |node: roxmltree::Node| node.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect::<String>();
    let mut lines = Vec::new();
    for node in root.descendants() {
        if class_is(&node, "title") {
            lines.push(format!("title: {}", text_of(node)));
        } else if class_is(&node, "legend-entry") {
            lines.push(format!("legend: {}", node.attribute("data-name").unwrap_or("?")));
        } else if class_is(&node, "axis") {
            let which = node.attribute("class").unwrap_or_default().replace("axis ", "");
            let label = node.descendants().find(|n| class_is(n, "axis-label")).map(text_of).unwrap_or_default();
            let ticks: Vec<String> = node.descendants().filter(|n| class_is(n, "tick")).map(text_of).collect();
            lines.push(format!("axis {which}: {label} | ticks: {}", ticks.join(", ")));
        } else if class_is(&node, "series") {
            let points: Vec<String> = node
                .children()
                .filter(|n| class_is(n, "point"))
                .map(|p| {
                    format!("({}, {})", p.attribute("data-x").unwrap_or("?"), p.attribute("data-y").unwrap_or("?"))
                })
                .collect();
            let dashed = if node.attribute("data-dashed") == Some("true") { " dashed" } else { "" };
            lines.push(format!("series {}{dashed}: {}", node.attribute("data-name").unwrap_or("?"), points.join(" ")));
        } else if class_is(&node, "group") {
            let bars: Vec<String> = node
                .children()
                .filter_map(|n| {
                    if class_is(&n, "bar") {
                        Some(format!("{}={}", n.attribute("data-series")?, n.attribute("data-value")?))
                    } else if class_is(&n, "bar-note") {
                        Some(format!("{}: {}", n.attribute("data-series")?, text_of(n)))
                    } else {
                        None
                    }
                })
                .collect();
            lines.push(format!("group {}: {}", node.attribute("data-label").unwrap_or("?"), bars.join("; ")));
        } else if class_is(&node, "row-missing") {
            let note = node.descendants().find(|n| class_is(n, "row-note")).map(text_of).unwrap_or_default();
            lines.push(format!("row {}: {note}", node.attribute("data-name").unwrap_or("?")));
        } else if class_is(&node, "no-data") {
            lines.push(format!("no data: {}", text_of(node)));
        }
    }
    lines.join("\n")
}

/// What every chart must have: a title, labelled axes with ticks, a legend, and drawn data inside the frame.
fn check_chart_structure(name: &str, svg: &str) {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: not well-formed: {e}"));
    let root = doc.root_element();
    let width: f64 = root.attribute("width").unwrap().parse().unwrap();
    let height: f64 = root.attribute("height").unwrap().parse().unwrap();
    let has_class = |n: &roxmltree::Node, c: &str| n.attribute("class").is_some_and(|x| x.split(' ').any(|y| y == c));
    let title = root.descendants().find(|n| has_class(n, "title")).and_then(|n| n.text()).unwrap_or_default();
    assert!(!title.is_empty(), "{name}: no title");
    let axes: Vec<_> = root.descendants().filter(|n| has_class(n, "axis")).collect();
    assert!(!axes.is_empty(), "{name}: no axis");
    for axis in &axes {
        let label = axis.descendants().find(|n| has_class(n, "axis-label")).and_then(|n| n.text()).unwrap_or_default();
        assert!(!label.is_empty(), "{name}: an axis without a label");
        assert!(
            axis.descendants().filter(|n| has_class(n, "tick")).count() >= 2,
            "{name}: axis '{label}' has < 2 ticks"
        );
    }
    assert!(root.descendants().any(|n| has_class(&n, "legend-entry")), "{name}: no legend");
    let bars: Vec<f64> = root
        .descendants()
        .filter(|n| has_class(n, "bar"))
        .map(|n| n.attribute("data-value").unwrap().parse::<f64>().unwrap())
        .collect();
    let series: Vec<_> = root.descendants().filter(|n| has_class(n, "series")).collect();
    assert!(bars.iter().any(|v| *v > 0.0) || !series.is_empty(), "{name}: neither bars nor series");
    let legend_names: Vec<&str> =
        root.descendants().filter(|n| has_class(n, "legend-entry")).filter_map(|n| n.attribute("data-name")).collect();
    for s in &series {
        let series_name = s.attribute("data-name").unwrap();
        // A series is named by the legend, or (a row of a strip chart) by its own label.
        let row_label = s.children().find(|n| has_class(n, "row-label")).and_then(|n| n.text());
        assert!(
            legend_names.contains(&series_name) || row_label == Some(series_name),
            "{name}: series {series_name} is neither in the legend nor labelled"
        );
        let points: Vec<_> = s.children().filter(|n| has_class(n, "point")).collect();
        assert!(!points.is_empty(), "{name}: series {series_name} has no points");
        for p in points {
            let cx: f64 = p.attribute("cx").unwrap().parse().unwrap();
            let cy: f64 = p.attribute("cy").unwrap().parse().unwrap();
            assert!((0.0..=width).contains(&cx) && (0.0..=height).contains(&cy), "{name}: point outside the chart");
        }
    }
}

#[test]
fn every_chart_of_every_fixture_is_well_formed_with_axes_legend_and_data() {
    let runs = vec![load("ext4.json"), load("xfs.json"), load("tmpfs.json")];
    let report = syncbench::present::report::build(&runs);
    assert_eq!(report.figures.len(), 50, "5 side-by-side charts + 16 for ext4 and xfs each + 13 for tmpfs");
    for figure in &report.figures {
        check_chart_structure(&figure.stem, &figure.svg);
    }
    let kinds = ["commits-one_write", "latency-one_write", "size-sweep-commits", "file-state", "commit-commits"];
    for kind in kinds {
        assert!(report.figures.iter().any(|f| f.stem == format!("ext4-{kind}")), "no ext4-{kind} chart");
    }
}

#[test]
fn chart_structure_of_the_ext4_run_matches_the_golden_outline() {
    let report = syncbench::present::report::build(&[load("ext4.json")]);
    let outlines: Vec<String> = report.figures.iter().map(|f| format!("== {}\n{}", f.stem, outline(&f.svg))).collect();
    insta::assert_snapshot!("ext4_chart_outlines", outlines.join("\n\n"));
}

#[test]
fn durable_and_not_durable_bars_look_different() {
    let report = syncbench::present::report::build(&[load("ext4.json")]);
    let svg = &report.figures.iter().find(|f| f.stem == "ext4-commits-one_write").unwrap().svg;
    insta::assert_snapshot!("ext4_one_write_bars_svg", svg);
    let doc = roxmltree::Document::parse(svg).unwrap();
    let fill_of = |series: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("bar") && n.attribute("data-series") == Some(series))
            .map(|n| n.attribute("fill").unwrap().to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (durable, not_durable) = (fill_of("durable"), fill_of("not durable"));
    assert_eq!(durable.len(), 1);
    assert_eq!(not_durable.len(), 1);
    assert!(not_durable.iter().next().unwrap().starts_with("url(#"), "not-durable bars are hatched");
    assert!(durable.is_disjoint(&not_durable));
}

#[test]
fn report_writes_one_self_contained_html_and_an_svg_per_chart() {
    let dir = tempfile::tempdir().unwrap();
    let html_path = dir.path().join("report.html");
    let svg_dir = dir.path().join("charts");
    syncbench()
        .arg("report")
        .args([fixture("ext4.json"), fixture("xfs.json"), fixture("tmpfs.json")])
        .arg("-o")
        .arg(&html_path)
        .arg("--svg")
        .arg(&svg_dir)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no JavaScript");
    for external in ["src=", "<link", "@import", "url(http", "href=\"http"] {
        assert!(!html.contains(external), "the page loads nothing from outside: found {external}");
    }
    assert_eq!(html.matches("<svg ").count(), 50);
    for needle in ["not_durable_tmpfs", "Torn-page protection", "write cache: write back", "EINVAL"] {
        assert!(html.contains(needle), "page shows {needle}");
    }
    let svgs: Vec<_> = std::fs::read_dir(&svg_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(svgs.len(), 50);
    for path in svgs {
        check_chart_structure(&path.display().to_string(), &std::fs::read_to_string(&path).unwrap());
    }
}

#[test]
fn report_reads_files_with_missing_fields_and_only_a_commit_payload() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("commit.json");
    std::fs::write(
        &input,
        r#"{"schema":"syncbench/v1","commit":{"method":"fdatasync","points":[
            {"clients":1,"group_commit":true,"commits_per_s":4000,"commits_per_sync":1.0},
            {"clients":8,"group_commit":true,"commits_per_s":30000,"commits_per_sync":7.4}]}}"#,
    )
    .unwrap();
    let out = dir.path().join("r.html");
    syncbench().arg("report").arg(&input).arg("-o").arg(&out).assert().success();
    let html = std::fs::read_to_string(out).unwrap();
    assert!(html.contains("Group commit with fdatasync: commits per second"));
    assert!(html.contains("No verdicts in this file."));
}

fn assert_usage_error(mut cmd: Command, mentions: &str) {
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "exit code 2");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(mentions), "'{stderr}' mentions {mentions}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("notes.json");
    std::fs::write(&not_json, "fsync is fast\n").unwrap();
    let wrong_schema = dir.path().join("fio.json");
    std::fs::write(&wrong_schema, r#"{"fio version":"fio-3.36","jobs":[]}"#).unwrap();
    let old_schema = dir.path().join("old.json");
    std::fs::write(&old_schema, r#"{"schema":"syncbench/v0"}"#).unwrap();
    let missing = dir.path().join("missing.json");
    let out = dir.path().join("report.html");
    let svg_dir = dir.path().join("svg");
    for (input, mentions) in [
        (&missing, "no such file"),
        (&not_json, "is not JSON"),
        (&wrong_schema, "no \"schema\" field"),
        (&old_schema, "syncbench/v0"),
    ] {
        let mut cmd = syncbench();
        cmd.arg("report").arg(fixture("ext4.json")).arg(input).arg("-o").arg(&out).arg("--svg").arg(&svg_dir);
        assert_usage_error(cmd, mentions);
        assert!(!out.exists() && !svg_dir.exists(), "nothing written for {}", input.display());
        let mut cmd = syncbench();
        cmd.arg("compare").arg(fixture("ext4.json")).arg(input);
        assert_usage_error(cmd, mentions);
    }
}

#[test]
fn report_needs_an_output_and_never_overwrites_an_input() {
    let mut cmd = syncbench();
    cmd.arg("report").arg(fixture("ext4.json"));
    assert_usage_error(cmd, "nothing to write");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("run.json");
    std::fs::copy(fixture("ext4.json"), &input).unwrap();
    let mut cmd = syncbench();
    cmd.arg("report").arg(&input).arg("-o").arg(&input);
    assert_usage_error(cmd, "is one of the input files");
    assert_eq!(std::fs::read(&input).unwrap(), std::fs::read(fixture("ext4.json")).unwrap());
}

#[test]
fn compare_needs_at_least_two_files() {
    syncbench().arg("compare").arg(fixture("ext4.json")).assert().code(2);
}

fn compare_in_fixtures(args: &[&str]) -> String {
    let output = syncbench().current_dir(fixtures()).arg("compare").args(args).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn compare_of_ext4_and_xfs_matches_the_golden_table() {
    insta::assert_snapshot!("compare_ext4_xfs_table", compare_in_fixtures(&["ext4.json", "xfs.json"]));
}

#[test]
fn compare_markdown_matches_the_golden_file() {
    let markdown = compare_in_fixtures(&["ext4.json", "tmpfs.json", "xfs.json", "--markdown", "-"]);
    insta::assert_snapshot!("compare_ext4_tmpfs_xfs_markdown", markdown);
}

#[test]
fn compare_json_has_ratios_with_uncertainty_and_environment_differences() {
    let text = compare_in_fixtures(&["ext4.json", "xfs.json", "--json", "-"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["schema"], "syncbench/v1");
    assert_eq!(doc["files"], serde_json::json!(["ext4.json", "xfs.json"]));
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 54);
    let fdatasync =
        cases.iter().find(|c| c["key"]["section"] == "one_write" && c["key"]["method"] == "fdatasync").unwrap();
    let ratio = &fdatasync["ratios"][0];
    let (a, b) =
        (fdatasync["cells"][0]["ops_per_s"].as_f64().unwrap(), fdatasync["cells"][1]["ops_per_s"].as_f64().unwrap());
    assert!((ratio["ratio"].as_f64().unwrap() - b / a).abs() < 1e-9);
    assert!(ratio["ci95"].as_f64().unwrap() > 0.0);
    assert_eq!(ratio["direction"], "slower");
    let fields: Vec<&str> =
        doc["environment_differences"].as_array().unwrap().iter().map(|d| d["field"].as_str().unwrap()).collect();
    assert!(fields.contains(&"file system") && fields.contains(&"mount options"), "{fields:?}");
    assert_eq!(doc["summaries"][0]["candidate"], "xfs.json");
}

#[test]
fn compare_writes_markdown_and_json_files_next_to_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let (md, json) = (dir.path().join("c.md"), dir.path().join("c.json"));
    syncbench()
        .arg("compare")
        .args([fixture("ext4.json"), fixture("xfs.json")])
        .arg("--markdown")
        .arg(&md)
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicates::str::contains("B vs A"));
    assert!(std::fs::read_to_string(md).unwrap().starts_with("## syncbench compare"));
    let _: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
}

/// An export target that cannot be written is refused in one line before any input is read (the inputs
/// here do not exist: the export is what the message names), and nothing is written.
#[test]
fn compare_refuses_an_unwritable_export_before_reading_inputs() {
    let out = syncbench()
        .args(["compare", "/nonexistent-a.json", "/nonexistent-b.json", "--openmetrics", "/nonexistent-dir/c.prom"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--openmetrics /nonexistent-dir/c.prom: directory /nonexistent-dir does not exist"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// CSV on stdout (the table moves to stderr), OpenMetrics to a file, and a JSON file `parse_any` reads.
#[test]
fn compare_writes_csv_openmetrics_and_an_enveloped_json() {
    let dir = tempfile::tempdir().unwrap();
    let (prom, json) = (dir.path().join("c.prom"), dir.path().join("c.json"));
    let out = syncbench()
        .current_dir(fixtures())
        .args(["compare", "ext4.json", "xfs.json", "--csv", "-", "--openmetrics"])
        .arg(&prom)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("case,section,method,"), "{csv}");
    assert_eq!(csv.lines().count(), 55, "a header and one row per shared case");
    assert!(String::from_utf8_lossy(&out.stderr).contains("B vs A"));
    let prom = std::fs::read_to_string(prom).unwrap();
    assert!(prom.contains("syncbench_compare_cases{") && prom.contains("outcome=\"within_noise\""), "{prom}");
    let doc = syncbench::core::export::read_any::<serde_json::Value>(&json).unwrap();
    assert_eq!(doc.payload["summaries"][0]["candidate"], "xfs.json");
    assert_eq!(doc.environment.fs_type, "ext4");
}

/// Run headless Chromium on `url` with a fresh profile; its stdout.
fn chromium(browser: &str, window: (u32, u32), action: &[String], url: &str) -> Vec<u8> {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={},{}", window.0, window.1))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(action)
        .arg(url)
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium {action:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

/// A report of real runs of this machine (`syncbench run` on ext4, `syncbench commit`), as Chromium lays it
/// out: every chart is in the DOM Chromium built, with its title, axes, legend and data (bars with values,
/// series with a drawn line and points), and a screenshot of the whole page (window as tall as the page) is
/// far larger than a blank page's screenshot of the same size.
#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| std::process::Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
    else {
        return crate::skip("chromium is not installed (Debian package chromium)");
    };
    let runs = ["measured-ext4-vda.json", "measured-commit-ext4.json"];
    let expected_charts = syncbench::present::report::build(&runs.map(load)).figures.len();
    assert!(expected_charts >= 15, "{expected_charts} charts");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    syncbench().arg("report").args(runs.map(fixture)).arg("-o").arg(&html).assert().success();
    // A copy that reports the laid-out page size in its title (the report itself has no script).
    let measured = dir.path().join("measured.html");
    let mut page = std::fs::read_to_string(&html).unwrap();
    page.push_str(
        "<script>document.title = 'SIZE ' + document.documentElement.scrollWidth + ' ' + \
         document.documentElement.scrollHeight + ' END';\n\
         const lines = c => { const r = document.createRange(); r.selectNodeContents(c); \
           return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; };\n\
         const wrapped = [...document.querySelectorAll('td.num, th')].filter(c => lines(c) > 1);\n\
         const topOf = s => { const e = document.querySelector(s); return e ? Math.round(e.getBoundingClientRect().top) : -1; };\n\
         document.title += ' WRAPPED ' + wrapped.length + ' ' + wrapped.slice(0, 3).map(c => c.textContent).join('|') + \
           ' FIG ' + topOf('figure') + ' ENV ' + topOf('table.environment') + ' RES ' + topOf('table.results') + ' DONE';</script>\n",
    );
    std::fs::write(&measured, page).unwrap();
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!doctype html><html><head><title>blank</title></head><body></body></html>\n").unwrap();
    let url = |p: &Path| format!("file://{}", p.display());

    let dom = String::from_utf8(chromium(browser, (1000, 1000), &["--dump-dom".into()], &url(&measured))).unwrap();
    let size = dom.split("SIZE ").nth(1).and_then(|s| s.split(" END").next()).expect("the page reported its size");
    let (page_w, page_h): (u32, u32) = match size.split(' ').map(|n| n.parse().expect(size)).collect::<Vec<_>>()[..] {
        [w, h] => (w, h),
        _ => panic!("bad size {size}"),
    };
    assert!(page_w <= 1000, "no horizontal overflow at 1000 px: {page_w}");
    // Numbers and headings on one line each, and the charts above the environment and the results table.
    let layout =
        dom.split(" WRAPPED ").nth(1).and_then(|s| s.split(" DONE").next()).expect("the page reported its layout");
    assert!(layout.starts_with("0 "), "table cells wrapped: {layout}");
    let top_of = |key: &str| -> i64 {
        layout.split(&format!("{key} ")).nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap()
    };
    assert!(top_of("FIG") >= 0 && top_of("FIG") < top_of("ENV") && top_of("ENV") < top_of("RES"), "{layout}");
    assert!(page_h > 3000, "a page with {expected_charts} charts is tall: {page_h}");
    // Every chart, as Chromium parsed it (the DOM is re-serialised by Chromium, not our file).
    let svgs: Vec<&str> = dom
        .split("<svg")
        .skip(1)
        .map(|rest| &rest[..rest.find("</svg>").expect("closed svg") + "</svg>".len()])
        .collect();
    assert_eq!(svgs.len(), expected_charts, "every chart is in the rendered page");
    for (i, rest) in svgs.iter().enumerate() {
        let svg = format!("<svg{rest}");
        let name = format!("rendered chart {i}");
        check_chart_structure(&name, &svg);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let has_class =
            |n: &roxmltree::Node, c: &str| n.attribute("class").is_some_and(|x| x.split(' ').any(|y| y == c));
        for series in doc.descendants().filter(|n| has_class(n, "series")) {
            let line = series.children().find(|n| n.has_tag_name("polyline") || n.has_tag_name("path"));
            let drawn = line.and_then(|l| l.attribute("points").or(l.attribute("d"))).unwrap_or_default();
            assert!(drawn.split([' ', ',']).filter(|t| !t.is_empty()).count() >= 2, "{name}: a series without a line");
        }
        let bars: Vec<_> = doc.descendants().filter(|n| has_class(n, "bar")).collect();
        assert!(
            bars.is_empty()
                || bars.iter().any(|b| b.attribute("width").and_then(|w| w.parse::<f64>().ok()) > Some(0.0)),
            "{name}: bars with no width"
        );
    }

    // The whole page in one screenshot, and a blank page of the same size for comparison.
    let window = (1000, (page_h + 20).min(16_000));
    let (shot, blank_shot) = (dir.path().join("page.png"), dir.path().join("blank.png"));
    std::thread::scope(|s| {
        let blank_url = url(&blank);
        let blank_args = [format!("--screenshot={}", blank_shot.display())];
        s.spawn(move || chromium(browser, window, &blank_args, &blank_url));
        chromium(browser, window, &[format!("--screenshot={}", shot.display())], &url(&html));
    });
    let (bytes, blank_bytes) = (std::fs::read(&shot).unwrap(), std::fs::read(&blank_shot).unwrap());
    assert_eq!(png_size(&bytes), window, "the screenshot covers the whole page");
    assert_eq!(png_size(&blank_bytes), window);
    // A blank page of this size compresses to ~60 kB; text and 16 charts make it over 1 MB.
    assert!(
        bytes.len() > 8 * blank_bytes.len(),
        "the screenshot has content: {} bytes vs {} for a blank page",
        bytes.len(),
        blank_bytes.len()
    );
}

#[test]
fn measured_runs_from_syncbench_run_render_and_compare() {
    // Written by `syncbench run` and `syncbench commit` on this project's test machine (ext4 on virtio, xfs on
    // a loop device): they guard against drift between what those commands write and what is read here.
    let runs = vec![load("measured-ext4-vda.json"), load("measured-xfs-loop.json"), load("measured-commit-ext4.json")];
    assert!(runs[..2].iter().all(|r| r.results.len() > 50));
    assert!(runs[2].commit.as_ref().is_some_and(|c| c.points.len() >= 4));
    let report = syncbench::present::report::build(&runs);
    for figure in &report.figures {
        check_chart_structure(&figure.stem, &figure.svg);
    }
    assert!(report.figures.iter().any(|f| f.stem == "measured-commit-ext4-commit-group-size"));
    let side_by_side = report.figures.iter().find(|f| f.stem == "runs-commits-one_write").unwrap();
    assert!(!side_by_side.svg.contains("measured-commit-ext4.json"), "a file without run results is not a run");
    let comparison = syncbench::present::compare::compare(&runs[..2]);
    assert_eq!(comparison.cases.len(), runs[0].results.len(), "every case of the same suite joins");
    assert!(comparison.cases.iter().all(|c| c.ratios[0].is_some()));
    let summary = &comparison.summaries[0];
    assert_eq!(summary.faster + summary.slower + summary.within_noise, comparison.cases.len());
    let fields: Vec<&str> = comparison.environment_differences.iter().map(|d| d.field.as_str()).collect();
    for field in ["file system", "mount options", "device chain", "loop backing"] {
        assert!(fields.contains(&field), "{field} differs between ext4 on vda and xfs on loop: {fields:?}");
    }
}

/// A text element's box in chart pixels: (left, top, right, bottom).
type TextBox = (f64, f64, f64, f64);

/// Advance of one character of DejaVu Sans Book in em (what Chromium on Debian draws `system-ui` and
/// `sans-serif` with), rounded up: measured independently of the layout code's own estimate.
fn dejavu_em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | 'I' | '\'' | '|' | '!' => 0.28,
        ' ' | '.' | ',' | ':' | ';' | '/' => 0.34,
        'f' | 't' | '(' | ')' | '[' | ']' | '-' | 'r' => 0.42,
        'm' | 'w' | '%' | '—' | '…' | 'M' | 'W' | '@' => 1.0,
        '0'..='9' | 'a'..='z' | '_' | 'µ' => 0.64,
        '+' | '×' | '±' | '=' | '<' | '>' | '▸' => 0.84,
        _ => 0.80,
    }
}

/// Every `<text>` of a chart with its box, from its position, anchor, font size (own or inherited), weight
/// and a `rotate(-90 …)` transform: ascent 0.76 em above the baseline, descent 0.24 em below.
fn text_boxes(svg: &str) -> Vec<(String, TextBox)> {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).and_then(|v| v.parse::<f64>().ok());
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            let text: String = n.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect();
            let size = n.ancestors().find_map(|a| num(&a, "font-size")).unwrap_or(16.0);
            let bold =
                n.attribute("font-weight").is_some_and(|w| w == "bold" || w.parse::<u32>().is_ok_and(|w| w >= 600));
            let width = text.chars().map(dejavu_em).sum::<f64>() * size * if bold { 1.1 } else { 1.0 };
            let (x, y) = (num(&n, "x").unwrap_or(0.0), num(&n, "y").unwrap_or(0.0));
            let start = match n.attribute("text-anchor") {
                Some("middle") => -width / 2.0,
                Some("end") => -width,
                _ => 0.0,
            };
            let (ascent, descent) = (0.76 * size, 0.24 * size);
            let rotated = n.attribute("transform").is_some_and(|t| t.starts_with("rotate(-90"));
            let rect = if rotated {
                // Rotated a quarter turn counter-clockwise about (x, y): the text runs upwards from y.
                (x - ascent, y - (start + width), x + descent, y - start)
            } else {
                (x + start, y - ascent, x + start + width, y + descent)
            };
            (text, rect)
        })
        .collect()
}

/// Pairs of overlapping texts and texts outside the chart, as readable messages (empty: none).
fn text_overlaps(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let size = |a: &str| doc.root_element().attribute(a).and_then(|v| v.parse::<f64>().ok()).unwrap();
    let (width, height) = (size("width"), size("height"));
    let boxes = text_boxes(svg);
    let mut problems = Vec::new();
    for (i, (a, ra)) in boxes.iter().enumerate() {
        if ra.0 < -0.5 || ra.1 < -0.5 || ra.2 > width + 0.5 || ra.3 > height + 0.5 {
            problems.push(format!("{a:?} {ra:?} is outside the {width}×{height} chart"));
        }
        for (b, rb) in &boxes[i + 1..] {
            // Boxes that only touch (within half a pixel) do not overlap.
            let (dx, dy) = (ra.2.min(rb.2) - ra.0.max(rb.0), ra.3.min(rb.3) - ra.1.max(rb.1));
            if dx > 0.5 && dy > 0.5 {
                problems.push(format!("{a:?} {ra:?} overlaps {b:?} {rb:?}"));
            }
        }
    }
    problems
}

/// The colour of each legend entry's swatch, and problems: two entries with one colour, or more entries
/// than a reader can tell apart.
fn legend_colour_problems(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let entries: Vec<_> = doc.descendants().filter(|n| n.attribute("class") == Some("legend-entry")).collect();
    let mut problems = Vec::new();
    if entries.len() > 12 {
        problems.push(format!("{} legend entries: too many to tell apart", entries.len()));
    }
    let mut seen: Vec<(String, String)> = Vec::new();
    for entry in entries {
        let name = entry.attribute("data-name").unwrap_or("?").to_string();
        let swatch = entry.children().find(|n| n.is_element() && !n.has_tag_name("text")).expect("a swatch");
        let colour = swatch.attribute("fill").or(swatch.attribute("stroke")).unwrap_or("?").to_string();
        if let Some((other, _)) = seen.iter().find(|(_, c)| *c == colour) {
            problems.push(format!("legend entries {other:?} and {name:?} share the colour {colour}"));
        }
        seen.push((name, colour));
    }
    problems
}

#[test]
fn no_chart_has_overlapping_text_or_repeated_legend_colours() {
    let names = ["ext4.json", "xfs.json", "tmpfs.json", "measured-ext4-vda.json", "measured-xfs-loop.json"];
    let mut runs: Vec<_> = names.iter().map(|n| load(n)).collect();
    runs.push(load("measured-commit-ext4.json"));
    let report = syncbench::present::report::build(&runs);
    assert!(report.figures.len() > 60, "{} charts", report.figures.len());
    let mut problems = Vec::new();
    for figure in &report.figures {
        for p in text_overlaps(&figure.svg).into_iter().chain(legend_colour_problems(&figure.svg)) {
            problems.push(format!("{}: {p}", figure.stem));
        }
        // Lines of a line chart: one colour each.
        let doc = roxmltree::Document::parse(&figure.svg).unwrap();
        let strokes: Vec<&str> =
            doc.descendants().filter(|n| n.has_tag_name("polyline")).filter_map(|n| n.attribute("stroke")).collect();
        let distinct: std::collections::BTreeSet<&str> = strokes.iter().copied().collect();
        if distinct.len() != strokes.len() {
            problems.push(format!("{}: lines share colours: {strokes:?}", figure.stem));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_page_checks_catch_overlapping_text_and_repeated_colours() {
    // The y-axis title as the line chart drew it before its margin followed the tick labels: 76 px left of
    // the plot, title centred at x = 16, tick labels right-aligned at x = 70.
    let planted = r##"<svg xmlns="http://www.w3.org/2000/svg" width="760" height="400" font-size="12">
<text class="tick" x="70" y="104" text-anchor="end">1.86 GiB/s</text>
<text class="axis-label" x="16" y="200" text-anchor="middle" transform="rotate(-90 16 200)">bytes written per second (higher is better)</text>
<text x="740" y="300">off the edge</text>
<g class="legend-entry" data-name="a"><rect fill="#0072b2"/><text x="10" y="380">a</text></g>
<g class="legend-entry" data-name="b"><rect fill="#0072b2"/><text x="40" y="380">b</text></g>
</svg>"##;
    let overlaps = text_overlaps(planted);
    assert!(overlaps.iter().any(|p| p.contains("overlaps") && p.contains("1.86 GiB/s")), "{overlaps:?}");
    assert!(overlaps.iter().any(|p| p.contains("\"off the edge\"") && p.contains("outside")), "{overlaps:?}");
    let colours = legend_colour_problems(planted);
    assert_eq!(colours, ["legend entries \"a\" and \"b\" share the colour #0072b2"]);
    // And the latency chart of 22 cases as it was (one colour per case from a 16-colour palette) fails.
    let many: String = (0..22)
        .map(|i| {
            format!(
                "<g class=\"legend-entry\" data-name=\"case {i}\"><line stroke=\"{}\"/><text x=\"{}\" y=\"40\">c{i}</text></g>",
                ["#0072b2", "#d55e00", "#009e73"][i % 3],
                30 * i
            )
        })
        .collect();
    let old_legend = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"100\">{many}</svg>");
    let problems = legend_colour_problems(&old_legend);
    assert!(problems[0].contains("22 legend entries"), "{problems:?}");
    assert!(problems.len() > 1);
}

#[test]
fn compare_refuses_files_of_different_kinds_and_files_with_nothing_to_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let probe_file = tmp.path().join("probe.json");
    std::fs::write(&probe_file, r#"{"schema":"syncbench/v1","command":"syncbench probe","environment":{}}"#).unwrap();
    for (files, mentions) in [
        (vec![fixture("ext4.json"), fixture("measured-commit-ext4.json")], "is a commit file; compare accepts run"),
        (vec![fixture("measured-commit-ext4.json"), fixture("measured-commit-ext4.json")], "syncbench report"),
        (vec![fixture("ext4.json"), probe_file.clone()], "is a probe file; compare accepts run files"),
    ] {
        let out = syncbench().arg("compare").args(&files).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{files:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(mentions), "{files:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn compare_says_the_environment_changed_when_one_run_was_disturbed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("ext4.json")).unwrap()).unwrap();
    let quiet = tmp.path().join("quiet.json");
    std::fs::write(&quiet, doc.to_string()).unwrap();
    doc["results"][1]["disturbances"] =
        serde_json::json!([{"kind": "device_io", "detail": "vda served requests that were not this case's"}]);
    let disturbed = tmp.path().join("disturbed.json");
    std::fs::write(&disturbed, doc.to_string()).unwrap();
    let out = syncbench().arg("compare").arg(&quiet).arg(&disturbed).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let first_lines: Vec<&str> = text.lines().take(2).collect();
    assert!(first_lines[0].starts_with("B and A are within noise of each other over"), "{text}");
    assert_eq!(
        first_lines[1],
        "environment changed: the runs were not equally disturbed: A undisturbed; B disturbed in 1 case(s) \
         (device_io: no magnitude recorded)"
    );
    let same = syncbench().arg("compare").arg(&quiet).arg(&quiet).output().unwrap();
    assert!(!String::from_utf8_lossy(&same.stdout).contains("environment changed"));
}
