"""The implementation of file-defined agent specs; import the public API from :mod:`agents.spec`.

``model`` is the front matter as a pydantic model, ``files`` reads one file,
``registry`` loads the layers and checks references across files.
"""
