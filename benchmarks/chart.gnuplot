# benchmarks/chart.gnuplot: the chart of docs/performance.md, one horizontal bar per row.
# Run by benchmarks/chart.py, which writes the data file and sets data, out, chart_title,
# xmax (thousands of pairs/s) and ymin. Index 0 of the data: y, pairs done per second, colour, label, value text;
# index 1: y and title of each group of bars.
set terminal pngcairo size 1200,720 font "DejaVu Sans,10" noenhanced
set output out
set title chart_title font ",11"
set xlabel "pairs done per second, 64 callers (more is better); each peer's bar: seatlock's pairs/s over its own, same run"
set xrange [0:xmax]
set yrange [ymin:0.7]
set format x "%.0fk"
set grid xtics lc rgb "#dddddd"
set border 3
set xtics nomirror
set ytics scale 0 nomirror
unset key
set style fill solid 0.9 noborder
set lmargin 26

# 1 seatlock blocking, 2 seatlock async, 3 a peer, 4 a baseline, 5 the memory backend
colour(i) = i == 1 ? 0x5b9bd5 : i == 2 ? 0x1f5fa8 : i == 3 ? 0xe07b1a : i == 4 ? 0x9a9a9a : 0x4c9a4c

plot data index 0 using (0):1:(0):($2 / 1000):($1 - 0.38):($1 + 0.38):(colour($3)):ytic(4) \
         with boxxyerror lc rgb variable, \
     data index 0 using ($2 / 1000):1:5 with labels left offset 0.6,0, \
     data index 1 using (0):1:2 with labels left font "DejaVu Sans:Bold,10"
