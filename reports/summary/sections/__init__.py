"""The summary's sections: each module holds the functions of some keys (registered in
:mod:`reports.summary.registry`)."""
