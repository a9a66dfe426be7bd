package main

import (
	"fmt"
	"time"
)

// printTable prints the gateway figures, one column per session (direct
// first), and the ratios the targets are stated in.
func printTable(names []string, small [][]time.Duration, cpu []time.Duration, conc []float64, big [][]time.Duration) {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	p50, p99 := make([]float64, len(names)), make([]float64, len(names))
	for i := range names {
		p50[i], p99[i] = us(pct(small[i], 50)), us(pct(small[i], 99))
	}
	fmt.Printf("%-44s %14s %14s %14s\n", "figure", names[0], names[1], names[2])
	fmt.Printf("%-44s %14.0f %14.0f %14.0f\n", fmt.Sprintf("small tools/call p50, µs (%d calls each)", len(small[0])), p50[0], p50[1], p50[2])
	fmt.Printf("%-44s %14s %+14.0f %+14.0f\n", "  added p50, µs", "—", p50[1]-p50[0], p50[2]-p50[0])
	fmt.Printf("%-44s %14.0f %14.0f %14.0f\n", "small tools/call p99, µs", p99[0], p99[1], p99[2])
	fmt.Printf("%-44s %14s %+14.0f %+14.0f\n", "  added p99, µs", "—", p99[1]-p99[0], p99[2]-p99[0])
	fmt.Printf("%-44s %14.1f %14.1f %14.1f\n", "CPU per call of the process, µs", us(cpu[0]), us(cpu[1]), us(cpu[2]))
	fmt.Printf("%-44s %14.0f %14.0f %14.0f\n", "8 concurrent callers, calls/s", conc[0], conc[1], conc[2])
	b := make([]float64, len(names))
	for i := range names {
		b[i] = float64(pct(big[i], 50)) / 1e6
	}
	fmt.Printf("%-44s %14.2f %14.2f %14.2f\n", fmt.Sprintf("1 MiB result p50, ms (%d calls each)", len(big[0])), b[0], b[1], b[2])
	fmt.Println()
	fmt.Println("targets (ratios within this run):")
	fmt.Printf("  added p50, host / splice proxy      %6.2fx  (<= 1.2x)\n", (p50[2]-p50[0])/(p50[1]-p50[0]))
	fmt.Printf("  added p99, host / splice proxy      %6.2fx  (<= 2x)\n", (p99[2]-p99[0])/(p99[1]-p99[0]))
	fmt.Printf("  8 callers, host / direct            %6.2fx  (>= 0.5x); splice proxy %.2fx\n", conc[2]/conc[0], conc[1]/conc[0])
	fmt.Printf("  1 MiB result, host / direct         %6.2fx  (<= 2x); splice proxy %.2fx\n", b[2]/b[0], b[1]/b[0])
}
