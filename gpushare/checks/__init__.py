"""Cross-key checks of the stack file, one module per config section: what pydantic cannot see in one key alone.

The loader (gpushare/loader.py) runs them in a fixed order, each when the sections it reads validated, and
collects what they find; a new rule goes into the module of the section whose key it reports.
"""
