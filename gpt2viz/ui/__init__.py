"""The Streamlit layer: the only code that touches st.session_state, st.query_params and caches."""
