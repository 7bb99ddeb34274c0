"""Tools above the compiler: they compile, build and run packages through the API and measure or explain them
(bench, debug, eval, fidelity, profile, report, example). The compiler never imports a tool."""
