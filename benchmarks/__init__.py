"""privtune's benchmarks, grouped into suites by the question they answer.

Scripts, not tests: each one measures something and writes a JSON and a Markdown file under
``benchmarks/results/``. ``python -m benchmarks list`` lists the suites and their scripts;
``python -m benchmarks <suite> [--quick]`` runs every script of a suite (``--quick``: a smoke run on tiny sizes
that writes nothing under ``benchmarks/results/``). See ``benchmarks/README.md``.
"""
