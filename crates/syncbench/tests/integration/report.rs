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

fn load(name: &str) -> syncbench::report::input::RunFile {
    // Relative names keep snapshots independent of where the repository is checked out.
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    syncbench::report::input::parse(name, &text).unwrap()
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
        assert!(legend_names.contains(&series_name), "{name}: series {series_name} is not in the legend");
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
    let report = syncbench::report::build(&runs);
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
    let report = syncbench::report::build(&[load("ext4.json")]);
    let outlines: Vec<String> = report.figures.iter().map(|f| format!("== {}\n{}", f.stem, outline(&f.svg))).collect();
    insta::assert_snapshot!("ext4_chart_outlines", outlines.join("\n\n"));
}

#[test]
fn durable_and_not_durable_bars_look_different() {
    let report = syncbench::report::build(&[load("ext4.json")]);
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
    let expected_charts = syncbench::report::build(&runs.map(load)).figures.len();
    assert!(expected_charts >= 15, "{expected_charts} charts");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    syncbench().arg("report").args(runs.map(fixture)).arg("-o").arg(&html).assert().success();
    // A copy that reports the laid-out page size in its title (the report itself has no script).
    let measured = dir.path().join("measured.html");
    let mut page = std::fs::read_to_string(&html).unwrap();
    page.push_str(
        "<script>document.title = 'SIZE ' + document.documentElement.scrollWidth + ' ' + \
         document.documentElement.scrollHeight + ' END';</script>\n",
    );
    std::fs::write(&measured, page).unwrap();
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!doctype html><html><head><title>blank</title></head><body></body></html>\n").unwrap();
    let url = |p: &Path| format!("file://{}", p.display());

    let dom = String::from_utf8(chromium(browser, (1000, 1000), &["--dump-dom".into()], &url(&measured))).unwrap();
    let size = dom.split("SIZE ").nth(1).and_then(|s| s.split(" END").next()).expect("the page reported its size");
    let (page_w, page_h): (u32, u32) = match size.split(' ').map(|n| n.parse().unwrap()).collect::<Vec<_>>()[..] {
        [w, h] => (w, h),
        _ => panic!("bad size {size}"),
    };
    assert!(page_w <= 1000, "no horizontal overflow at 1000 px: {page_w}");
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
    let report = syncbench::report::build(&runs);
    for figure in &report.figures {
        check_chart_structure(&figure.stem, &figure.svg);
    }
    assert!(report.figures.iter().any(|f| f.stem == "measured-commit-ext4-commit-group-size"));
    let side_by_side = report.figures.iter().find(|f| f.stem == "runs-commits-one_write").unwrap();
    assert!(!side_by_side.svg.contains("measured-commit-ext4.json"), "a file without run results is not a run");
    let comparison = syncbench::compare::compare(&runs[..2]);
    assert_eq!(comparison.cases.len(), runs[0].results.len(), "every case of the same suite joins");
    assert!(comparison.cases.iter().all(|c| c.ratios[0].is_some()));
    let summary = &comparison.summaries[0];
    assert_eq!(summary.faster + summary.slower + summary.within_noise, comparison.cases.len());
    let fields: Vec<&str> = comparison.environment_differences.iter().map(|d| d.field.as_str()).collect();
    for field in ["file system", "mount options", "device chain", "loop backing"] {
        assert!(fields.contains(&field), "{field} differs between ext4 on vda and xfs on loop: {fields:?}");
    }
}
