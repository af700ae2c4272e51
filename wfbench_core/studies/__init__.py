"""Studies that run the benchmark several times and review what came back: bisect, crosscheck."""
