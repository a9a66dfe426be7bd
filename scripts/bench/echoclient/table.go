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
	b := make([]float64, len(names))
	for i := range names {
		b[i] = float64(pct(big[i], 50)) / 1e6
	}
	row := func(label, format string, v func(i int) any) {
		fmt.Printf("%-44s", label)
		for i := range names {
			if i == 0 && format[1] == '+' {
				fmt.Printf(" %14s", "—")
				continue
			}
			fmt.Printf(" "+format, v(i))
		}
		fmt.Println()
	}
	row("figure", "%14s", func(i int) any { return names[i] })
	row(fmt.Sprintf("small tools/call p50, µs (%d calls each)", len(small[0])), "%14.0f", func(i int) any { return p50[i] })
	row("  added p50, µs", "%+14.0f", func(i int) any { return p50[i] - p50[0] })
	row("small tools/call p99, µs", "%14.0f", func(i int) any { return p99[i] })
	row("  added p99, µs", "%+14.0f", func(i int) any { return p99[i] - p99[0] })
	row("CPU per call of the process, µs", "%14.1f", func(i int) any { return us(cpu[i]) })
	row("8 concurrent callers, calls/s", "%14.0f", func(i int) any { return conc[i] })
	row(fmt.Sprintf("1 MiB result p50, ms (%d calls each)", len(big[0])), "%14.2f", func(i int) any { return b[i] })
	fmt.Println()
	fmt.Println("targets (ratios within this run):")
	fmt.Printf("  added p50, host / splice proxy      %6.2fx  (<= 1.2x)\n", (p50[2]-p50[0])/(p50[1]-p50[0]))
	fmt.Printf("  added p99, host / splice proxy      %6.2fx  (<= 2x)\n", (p99[2]-p99[0])/(p99[1]-p99[0]))
	fmt.Printf("  8 callers, host / direct            %6.2fx  (>= 0.5x); splice proxy %.2fx\n", conc[2]/conc[0], conc[1]/conc[0])
	fmt.Printf("  1 MiB result, host / direct         %6.2fx  (<= 2x); splice proxy %.2fx\n", b[2]/b[0], b[1]/b[0])
	if len(names) > 3 {
		fmt.Printf("  the same for the -before host: added p50 %.2fx, p99 %.2fx, 8 callers %.2fx, 1 MiB %.2fx\n",
			(p50[3]-p50[0])/(p50[1]-p50[0]), (p99[3]-p99[0])/(p99[1]-p99[0]), conc[3]/conc[0], b[3]/b[0])
	}
}
