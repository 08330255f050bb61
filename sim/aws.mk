# sim/aws: kanna-sim's AWS side (filled in by its area)
