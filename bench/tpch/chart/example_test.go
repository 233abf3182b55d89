package chart_test

import (
	"fmt"
	"image/png"
	"log"
	"os"
	"path/filepath"

	"github.com/pgonion/pgonion/bench/tpch/chart"
)

func ExampleWriteRatioChart() {
	dir, err := os.MkdirTemp("", "chart")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "ratio.png")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	bars := []chart.Bar{
		{Label: "Q1", Ratio: 1.34, Status: chart.StatusMatch},
		{Label: "Q2", Ratio: 0, Status: chart.StatusRefused},
		{Label: "Q3", Ratio: 0.8, Status: chart.StatusMismatch},
	}
	if err := chart.WriteRatioChart(f, "TPC-H SF1", bars); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	f, err = os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %dx%d\n", filepath.Base(path), cfg.Width, cfg.Height)
	// Output: ratio.png: 900x220
}
