"""Analysis over recorded runs: best-so-far curves as analysis inputs, the forecast's prior, the
stored moments, the why of a new best, reports. The pure logic (fits, forecasts, moment detection)
is in ``edgetui.replay``. May import ``edgetui.record``, ``edgetui.store.queries``, ``edgetui.parsers``,
``edgetui.replay`` and the base modules of ``edgetui``."""
