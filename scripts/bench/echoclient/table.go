package main

import (
	"fmt"
	"time"
)

// The columns of the table: the sessions, in main's order.
const (
	colDirect = iota
	colSplice
	colDurable
	colHost
	colBefore
)

// printTable prints the gateway figures, one column per session (direct
// first), and the ratios the targets are stated in (issue 27): the host
// against the durable proxy, which does the same durable work, with the
// bare splice proxy quoted beside it.
func printTable(names []string, small [][]time.Duration, cpu []time.Duration, conc []float64, big, big5 [][]time.Duration) {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	p50, p99 := make([]float64, len(names)), make([]float64, len(names))
	for i := range names {
		p50[i], p99[i] = us(pct(small[i], 50)), us(pct(small[i], 99))
	}
	b, b5 := make([]float64, len(names)), make([]float64, len(names))
	for i := range names {
		b[i] = float64(pct(big[i], 50)) / 1e6
		b5[i] = float64(pct(big5[i], 50)) / 1e6
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
	row(fmt.Sprintf("5 MiB result p50, ms (%d calls each)", len(big5[0])), "%14.2f", func(i int) any { return b5[i] })
	added := func(p []float64, i, over int) float64 { return (p[i] - p[0]) / (p[over] - p[0]) }
	fmt.Println()
	fmt.Println("targets (ratios within this run; the splice proxy's ratio to the durable proxy beside them):")
	fmt.Printf("  added p50, host / durable proxy      %6.2fx  (<= 1.2x); splice proxy %.2fx\n", added(p50, colHost, colDurable), added(p50, colSplice, colDurable))
	fmt.Printf("  added p99, host / durable proxy      %6.2fx  (<= 2x); splice proxy %.2fx\n", added(p99, colHost, colDurable), added(p99, colSplice, colDurable))
	fmt.Printf("  CPU per call, host / durable proxy   %6.2fx  (<= 1.5x)\n", float64(cpu[colHost])/float64(cpu[colDurable]))
	fmt.Printf("  8 callers, host / durable proxy      %6.2fx  (>= 0.8x); host / direct %.2fx, splice proxy / direct %.2fx\n",
		conc[colHost]/conc[colDurable], conc[colHost]/conc[colDirect], conc[colSplice]/conc[colDirect])
	fmt.Printf("  1 MiB result, host / direct          %6.2fx  (<= 2x); splice proxy %.2fx\n", b[colHost]/b[colDirect], b[colSplice]/b[colDirect])
	fmt.Printf("  5 MiB result, host / direct          %6.2fx  (<= 2x); host 5 MiB / 1 MiB %.2fx (<= 5x)\n", b5[colHost]/b5[colDirect], b5[colHost]/b[colHost])
	if len(names) > colBefore {
		fmt.Printf("  the same for the -before host: added p50 %.2fx, p99 %.2fx, CPU %.2fx, 8 callers %.2fx, 1 MiB %.2fx\n",
			added(p50, colBefore, colDurable), added(p99, colBefore, colDurable), float64(cpu[colBefore])/float64(cpu[colDurable]),
			conc[colBefore]/conc[colDurable], b[colBefore]/b[colDirect])
	}
}
