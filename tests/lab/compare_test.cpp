#include "xl/lab/compare.h"

#include <cairo.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>

#include "test_util.h"
#include "xl/lab/plot.h"

namespace xl::lab {
namespace {

using test::TempDir;
using test::write_file;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A run of 20 steps over two processes (killed after logging step 15, resumed from its
// checkpoint at step 10), then evaluated.
void write_resumed_run(const std::filesystem::path& dir) {
  write_file(
      dir / "config.yaml",
      "model:\n  d_model: 16\n  transformer_xl:\n    mem_len: 8\nrun:\n  name: a\n");
  write_file(
      dir / "metrics.jsonl",
      R"({"event":"start","from_step":0,"time":"2026-11-25T10:00:00.000Z"}
{"split":"train","step":10,"loss":5.0,"ppl":148.4,"time":"2026-11-25T10:00:30.000Z"}
{"split":"valid","step":10,"loss":4.0,"ppl":54.6,"time":"2026-11-25T10:01:00.000Z"}
{"split":"train","step":15,"loss":9.0,"ppl":8103.1,"time":"2026-11-25T10:01:40.000Z"}
{"event":"start","from_step":10,"time":"2026-11-25T11:00:00.000Z"}
{"event":"resumed","step":10,"logged_until":15,"time":"2026-11-25T11:00:00.000Z"}
{"split":"train","step":15,"loss":4.5,"ppl":90.0,"repeat":true,"time":"2026-11-25T11:00:20.000Z"}
{"split":"train","step":20,"loss":4.2,"ppl":66.7,"time":"2026-11-25T11:00:40.000Z"}
{"split":"valid","step":20,"loss":4.1,"ppl":60.3,"time":"2026-11-25T11:01:00.000Z"}
{"split":"test","step":20,"mode":"memory","loss":3.5,"ppl":33.1,"time":"2026-11-25T11:05:00.000Z"}
{"split":"train","step":25,"loss":)");
}

TEST(CompareRuns, SummarizesAResumedRunFromItsRecords) {
  TempDir dir;
  write_resumed_run(dir / "a");
  const auto run = summarize_run(dir / "a");
  EXPECT_EQ(run.steps, 20);
  EXPECT_EQ(run.metric, "ppl");
  // 100 s in the first process, 60 s in the second: xl-eval's record 4 minutes after the last
  // training record is no training time.
  EXPECT_DOUBLE_EQ(run.seconds, 160.0);
  EXPECT_EQ(run.records, 10);
  EXPECT_EQ(run.unreadable, 0); // the torn last line is no complete line
  ASSERT_EQ(run.train.size(), 3u);
  EXPECT_DOUBLE_EQ(run.train[1].loss, 4.5); // the resumed run's step 15
  EXPECT_DOUBLE_EQ(*run.best_valid_loss, 4.0);
  EXPECT_DOUBLE_EQ(run.evaluations.at("test/memory").loss, 3.5);
  EXPECT_EQ(run.config.at("model.transformer_xl.mem_len"), "8");
}

TEST(CompareRuns, TableShowsMetricsAndOnlyTheKeysThatDiffer) {
  TempDir dir;
  write_resumed_run(dir / "a");
  write_file(
      dir / "b/config.yaml",
      "model:\n  d_model: 16\n  transformer_xl:\n    mem_len: 0\nrun:\n  name: b\n");
  write_file(
      dir / "b/metrics.jsonl",
      R"({"event":"start","from_step":0,"time":"2026-11-25T10:00:00.000Z"}
{"split":"train","step":20,"loss":4.8,"ppl":121.5,"time":"2026-11-25T10:00:50.000Z"}
{"split":"valid","step":20,"loss":4.6,"ppl":99.5,"time":"2026-11-25T10:01:00.000Z"}
)");
  const auto table = compare_runs({summarize_run(dir / "a"), summarize_run(dir / "b")});
  EXPECT_THAT(
      table.header,
      ElementsAre(
          "run",
          "steps",
          "time",
          "train loss",
          "valid loss",
          "best valid loss",
          "best valid ppl",
          "test ppl",
          "model.transformer_xl.mem_len"));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_THAT(
      table.rows[0],
      ElementsAre(
          (dir / "a").string(),
          "20",
          "2m40s",
          "4.2000",
          "4.1000",
          "4.0000",
          "54.598",
          "33.115",
          "8"));
  EXPECT_EQ(table.rows[1][7], "");
  EXPECT_EQ(table.rows[1][8], "0");
  EXPECT_THAT(to_markdown(table), HasSubstr("| best valid ppl |"));
  EXPECT_THAT(to_csv(table), HasSubstr("run,steps,time,train loss,valid loss,best valid loss"));
  EXPECT_THROW(summarize_run(dir / "none"), UserError);
}

// Each row is read by its own run: a word-level run beside a byte-level one names its unit in
// every cell, a run without readable records says so, and an evaluation of a checkpoint from
// outside the run is a column of its own.
TEST(CompareRuns, EachRowIsReadByItsOwnRun) {
  TempDir dir;
  write_resumed_run(dir / "a");
  write_file(
      dir / "c/metrics.jsonl",
      "not json\n"
      R"({"split":"valid","step":20,"loss":0.6931,"bpc":1.0}
{"split":"test","step":20,"mode":"memory","loss":0.5,"bpc":0.72,"elsewhere":true}
)");
  write_file(dir / "c/config.yaml", "run:\n  name: c\n");
  // Records of a split whose fields are of the wrong kind are counted apart, and left out.
  write_file(
      dir / "e/metrics.jsonl",
      R"({"split":"train","step":"abc","loss":"low"}
{"split":"train","step":-5,"loss":1.0}
{"split":"train","step":1e30,"loss":1.0}
{"split":"valid","step":3,"loss":-0.5}
{"split":"train","step":3,"loss":2.0}
{"event":"start"}
)");
  write_file(dir / "e/config.yaml", "run:\n  name: e\n");
  const auto e = summarize_run(dir / "e");
  EXPECT_EQ(e.records, 6);
  EXPECT_EQ(e.malformed, 4); // a negative loss is no loss
  EXPECT_FALSE(e.best_valid_loss.has_value());
  EXPECT_EQ(e.steps, 3);
  write_file(dir / "f/metrics.jsonl", "{}\n");
  write_file(dir / "f/config.yaml", "model: [unclosed\n");
  EXPECT_THAT(
      test::user_error([&] { summarize_run(dir / "f"); }),
      HasSubstr("the run's config cannot be read (not valid YAML at line "));
  write_file(dir / "d/metrics.jsonl", "garbage\n\n");
  write_file(dir / "d/config.yaml", "run:\n  name: d\n");
  const auto c = summarize_run(dir / "c");
  EXPECT_EQ(c.records, 2);
  EXPECT_EQ(c.unreadable, 1);
  EXPECT_DOUBLE_EQ(c.evaluations.at("test/memory (checkpoint from elsewhere)").loss, 0.5);
  const auto table = compare_runs({summarize_run(dir / "a"), c, summarize_run(dir / "d")});
  EXPECT_EQ(table.header[6], "best valid metric");
  EXPECT_EQ(table.rows[0][6], "54.598 ppl");
  EXPECT_EQ(table.rows[1][6], "1.000 bpc");
  EXPECT_EQ(table.rows[2][1], "no records");
  EXPECT_EQ(table.rows[2][6], "");
  EXPECT_THAT(table.header, testing::Contains("test metric (checkpoint from elsewhere)"));
}

// A classifier's loss has no unit: its runs are compared by their accuracy (the best over the
// validations, not the one at the best loss), its evaluations too; the loss was shown before.
TEST(CompareRuns, ClassifiersAreComparedByTheirAccuracy) {
  TempDir dir;
  for (const auto& [name, best] : {std::pair{"e", "0.75"}, std::pair{"f", "0.5"}}) {
    write_file(dir / name / "config.yaml", std::string("run:\n  name: ") + name + "\n");
    write_file(
        dir / name / "metrics.jsonl",
        std::string(R"({"split":"valid","step":10,"loss":0.6,"loss/cls":0.6,"acc/accuracy":)") +
            best +
            "}\n"
            R"({"split":"valid","step":20,"loss":0.5,"loss/cls":0.5,"acc/accuracy":0.625}
{"split":"test","step":20,"mode":"memory","loss":0.55,"acc/accuracy":0.6}
)");
  }
  const auto e = summarize_run(dir / "e");
  EXPECT_EQ(e.metric, "acc");
  EXPECT_DOUBLE_EQ(*e.best_valid_accuracy, 0.75);
  EXPECT_DOUBLE_EQ(*e.evaluations.at("test/memory").accuracy, 0.6);
  const auto table = compare_runs({e, summarize_run(dir / "f")});
  EXPECT_EQ(table.header[6], "best valid acc");
  EXPECT_EQ(table.header[7], "test acc");
  EXPECT_EQ(table.rows[0][6], "0.750");
  EXPECT_EQ(table.rows[1][6], "0.625");
  EXPECT_EQ(table.rows[0][7], "0.600");
}

// Evaluations of other settings are columns of their own, named by what sets them apart: two
// memories and a stride, beside records older than the settings; a file's score is no split's.
TEST(CompareRuns, EvaluationsOfOtherSettingsAreColumnsOfTheirOwn) {
  TempDir dir;
  write_file(dir / "g/config.yaml", "run:\n  name: g\n");
  write_file(
      dir / "g/metrics.jsonl",
      R"({"split":"valid","step":20,"loss":4.0,"ppl":54.6}
{"split":"test","step":20,"mode":"memory","loss":3.0,"ppl":20.1,"eval":{"tgt_len":64,"batch":10,"mem_len":256,"clamp_len":-1,"same_length":false}}
{"split":"test","step":20,"mode":"memory","loss":2.9,"ppl":18.2,"eval":{"tgt_len":64,"batch":10,"mem_len":640,"clamp_len":-1,"same_length":false}}
{"split":"test","step":20,"mode":"memory","loss":2.8,"ppl":16.4,"eval":{"tgt_len":32,"batch":10,"mem_len":640,"clamp_len":-1,"same_length":false}}
{"split":"test","step":20,"mode":"vanilla","loss":3.2,"ppl@stride=16":24.5,"eval":{"window":64,"stride":16}}
{"split":"test","step":20,"mode":"vanilla","loss":3.4,"ppl":30.0,"eval":{"window":64,"stride":1}}
{"split":"test","step":20,"mode":"memory","loss":3.1,"ppl":22.2}
{"split":"my.txt","step":20,"mode":"memory","loss":9.0,"ppl":8103.1}
)");
  const auto g = summarize_run(dir / "g");
  EXPECT_EQ(g.evaluations.size(), 6u);
  const auto table = compare_runs({g});
  EXPECT_THAT(
      std::vector<std::string>(table.header.begin() + 7, table.header.end()),
      ElementsAre(
          "test ppl",
          "test ppl mem=256 tgt=64",
          "test ppl mem=640 tgt=32",
          "test ppl mem=640 tgt=64",
          "test ppl vanilla",
          "test ppl@stride=16"));
  EXPECT_THAT(
      std::vector<std::string>(table.rows[0].begin() + 7, table.rows[0].end()),
      ElementsAre("22.198", "20.086", "16.445", "18.174", "29.964", "24.533"));
  EXPECT_THAT(to_csv(table), HasSubstr("test ppl mem=256 tgt=64,test ppl mem=640 tgt=32"));
}

// The runs of an ablation, each evaluated once at a memory of its own, share a column, and each
// cell names the memory; a memory all share names the column.
TEST(CompareRuns, RunsEvaluatedOnceEachShareAColumn) {
  TempDir dir;
  const auto run = [&](const std::string& name, int mem, double loss) {
    write_file(dir / name / "config.yaml", "run:\n  name: " + name + "\n");
    write_file(
        dir / name / "metrics.jsonl",
        fmt::format(
            R"({{"split":"test","step":20,"mode":"memory","loss":{},"ppl":1.0,"eval":{{"tgt_len":64,"batch":10,"mem_len":{}}}}})"
            "\n",
            loss,
            mem));
    return summarize_run(dir / name);
  };
  const auto ablation = compare_runs({run("full", 640, 3.0), run("no_memory", 0, 3.5)});
  EXPECT_EQ(ablation.header[7], "test ppl");
  EXPECT_EQ(ablation.rows[0][7], "20.086 mem=640");
  EXPECT_EQ(ablation.rows[1][7], "33.115 mem=0");
  const auto same = compare_runs({run("a", 640, 3.0), run("b", 640, 3.5)});
  EXPECT_EQ(same.header[7], "test ppl mem=640");
  EXPECT_EQ(same.rows[1][7], "33.115");
}

// The PNG is read back: each run's colour is drawn, and the image has the asked size.
TEST(PlotCurves, DrawsEveryRunInItsColour) {
  TempDir dir;
  write_resumed_run(dir / "a");
  write_file(dir / "b/config.yaml", "run:\n  name: b\n");
  write_file(
      dir / "b/metrics.jsonl",
      R"({"split":"train","step":5,"loss":6.0}
{"split":"valid","step":10,"loss":5.0}
{"split":"train","step":20,"loss":4.8}
{"split":"valid","step":20,"loss":4.6}
)");
  const auto png = dir / "curves.png";
  write_file(png, plot_curves({summarize_run(dir / "a"), summarize_run(dir / "b")}));
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> image(
      cairo_image_surface_create_from_png(png.c_str()), cairo_surface_destroy);
  ASSERT_EQ(cairo_surface_status(image.get()), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(image.get()), 1200);
  EXPECT_EQ(cairo_image_surface_get_height(image.get()), 700);
  const unsigned char* data = cairo_image_surface_get_data(image.get());
  const int stride = cairo_image_surface_get_stride(image.get());
  for (size_t run = 0; run < 2; ++run) {
    const auto want = run_colour(run);
    int64_t pixels = 0;
    for (int y = 0; y < 700; ++y) {
      for (int x = 0; x < 870; ++x) {              // the plot area, left of the legend
        const auto* p = data + y * stride + 4 * x; // little-endian xRGB
        pixels += p[2] == want[0] && p[1] == want[1] && p[0] == want[2] ? 1 : 0;
      }
    }
    EXPECT_GT(pixels, 200) << "run " << run;
  }
  EXPECT_THROW(plot_curves({}), UserError);
}

} // namespace
} // namespace xl::lab
