package chart_test

import (
	"bytes"
	"fmt"
	"image/png"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/workload"
)

// Draw half an hour of Atlas TP4 traffic (1,000 tokens in, 200 out) that
// triples from 2 to 6 requests/s for its middle ten minutes (sim's
// ExampleSchedule, whose figures this repeats), served by three replicas
// throughout (a fixed fleet, run as a constant schedule so that it has a
// timeline) and by a schedule of one, three, one replicas whose joins
// take a declared 90 s cold start, asked for when the peak starts or 90 s
// ahead of it. The attainment panel shows where the late schedule loses
// its 0.175: in the peak's first 5-minute bin, about half its requests
// miss the SLO.
func ExampleDay() {
	run := func(policy sim.Schedule) *sim.ScaleSummary {
		cfg := sim.Config{
			Fleet: sim.Fleet{Replicas: sim.Copies(policy.Steps[0].Replicas, sim.ReplicaConfig{}), Autoscale: sim.Autoscale{
				Policy: policy, Max: 3, ColdStart: sim.ColdStart{Load: 60 * time.Second, Capture: 30 * time.Second}}},
			Window: sim.Window{Horizon: 30 * time.Minute},
		}
		load := workload.Schedule{Steps: []workload.RateStep{{Duration: 10 * time.Minute, Rate: 2}, {Duration: 10 * time.Minute, Rate: 6}, {Duration: 10 * time.Minute, Rate: 2}}}
		src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
		if err != nil {
			panic(err)
		}
		sum, err := sim.Run(cfg, src, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("attainment %.3f, replica-hours %.2f, %d samples\n", sum.Attainment, sum.Scale.ReplicaHours, len(sum.Scale.Timeline))
		return sum.Scale
	}
	steps := []sim.ReplicaStep{{Duration: 10 * time.Minute, Replicas: 1}, {Duration: 10 * time.Minute, Replicas: 3}, {Duration: time.Hour, Replicas: 1}}
	static := run(sim.Schedule{Steps: []sim.ReplicaStep{{Duration: time.Hour, Replicas: 3}}})
	late := run(sim.Schedule{Steps: steps})
	ahead := run(sim.Schedule{Steps: steps, Lead: 90 * time.Second})
	ps, err := chart.Day("Half an hour that triples", 0, // 5-minute bins
		chart.DayArm{Name: "static 3", Scale: static}, chart.DayArm{Name: "schedule", Scale: late}, chart.DayArm{Name: "schedule, 90 s ahead", Scale: ahead})
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer // or chart.Save("day.png", ps)
	if err := chart.Write(&buf, chart.PNG, ps); err != nil {
		panic(err)
	}
	img, err := png.DecodeConfig(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Printf("day.png: %d panels, %d × %d pixels\n", len(ps), img.Width, img.Height)
	// Output:
	// attainment 1.000, replica-hours 1.50, 121 samples
	// attainment 0.825, replica-hours 0.84, 121 samples
	// attainment 0.991, replica-hours 0.89, 121 samples
	// day.png: 3 panels, 1063 × 1782 pixels
}
