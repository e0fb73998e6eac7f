"""The writers of the synthetic SForge runs, driven by ``sample_runs/generate.py``.

FROZEN (tests/test_moments_acceptance.py checks each one's SHA-256 against docs/moments.md): the
moment runs the moment detector was tuned and tested on, and every module they import:

* ``moment_runs``: gravitational-wave-like runs with planted reframing moments (``--moment-runs``);
* ``gw_run``: run 1 of the bundled samples, whose machinery the moment runs extend;
* ``run_folder``, ``judge_rounds``, ``claude_transcript``, ``sforge_texts``, ``writers``: the
  files every generated run folder holds (run config and logs, judge round folders, Claude
  Code transcript, SForge's texts, clock, ids and file writers).

Not frozen (tests/test_sample_generator.py compares their output with the committed samples):
``bundled`` (which runs are written, the outputs the generator owns), ``gitlet_run``,
``vrp_run``, ``game_run``, ``legacy_run`` (runs 2 to 5), ``truth`` (the ``_truth/`` files) and
``readme`` (``sample_runs/README.md``).

Imports: the standard library, ``edgetui.replay`` (selection and rescale) and each other; a
frozen module imports only frozen ones. This file holds only its docstring, so importing the
package cannot change what the frozen modules write.
"""
