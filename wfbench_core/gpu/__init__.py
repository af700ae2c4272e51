"""On the GPU host: the worker process, the timer, sampling, device checks and measurements."""
